/**
 * The relay's upstream in tests: a loopback HTTP server in front of the real emulator that
 * records every call and can be scripted (over HTTP, see control.ts) to answer 429, 500 or
 * nothing at all. Without an emulator URL it answers itself with the shapes of docs/platform.md.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Fault, Received } from './control.js';

export interface TestUpstream {
  url: string;
  close(): Promise<void>;
}

const hex24 = () => Array.from({ length: 24 }, () => Math.floor(Math.random() * 16).toString(16)).join('');

/** A stand-in platform answering person/merge and activities/create like the recordings. */
function fakePlatform(key: string) {
  const people = new Map<string, string>();
  return (path: string, headers: Record<string, string>, body: any): { status: number; body: unknown } => {
    if (headers['x-api-key'] !== key) return { status: 401, body: { request_id: hex24(), code: 401, error: 'Unauthorized' } };
    if (path === '/v1/person/merge') {
      const results = (body.people ?? []).map((person: any) => {
        const email = person.fields?.['str::email'];
        if (typeof email === 'string' && email.endsWith('@suppressed.example')) return { status: 'suppressed', error: 'Email is suppressed' };
        const idKey = String(email ?? person.fields?.['str::ei'] ?? hex24());
        const existing = people.get(idKey);
        if (existing) return { person_id: existing, status: 'merged' };
        const id = `00${hex24().slice(2)}`;
        people.set(idKey, id);
        return { person_id: id, status: 'created' };
      });
      if (results.every((r: any) => r.status === 'suppressed'))
        return { status: 400, body: { request_id: hex24(), code: 400, error: 'No people merged', details: results } };
      return { status: 200, body: { people: results } };
    }
    if (path === '/v1/activities/create')
      return { status: 200, body: { activities: (body.activities ?? []).map(() => ({ status: 'queued', person_status: 'queued' })) } };
    return { status: 404, body: { request_id: hex24(), code: 404, error: 'Unknown endpoint or method' } };
  };
}

/** Starts the test upstream on loopback; `emulatorUrl` forwards to a real emulator. */
export async function startTestUpstream(options: { key: string; emulatorUrl?: string }): Promise<TestUpstream> {
  const received: Received[] = [];
  let faults: Fault[] = [];
  let always: Fault | undefined;
  const fake = fakePlatform(options.key);

  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of req) chunks.push(chunk as Buffer);
    } catch {
      // The caller went away mid-body (its timeout aborted the call): nobody is left to answer, and
      // an async handler's rejection would be an unhandled one in the test run's own process.
      return;
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const path = (req.url ?? '/').split('?')[0]!;
    /** The status and half the answer, chunked (no length), and never the rest: the connection stays open. */
    const stall = (status: number, text: string) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.write(text.slice(0, Math.floor(text.length / 2)));
    };
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (path.startsWith('/__control/')) {
      const command = path.slice('/__control/'.length);
      const input = text ? JSON.parse(text) : undefined;
      if (command === 'faults') faults = [...(input as Fault[])];
      else if (command === 'always') always = input ?? undefined;
      else if (command === 'reset') {
        received.length = 0;
        faults = [];
        always = undefined;
      } else if (command === 'received') return reply(200, received);
      return reply(200, { ok: true });
    }
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    const headers = Object.fromEntries(Object.entries(req.headers).map(([name, value]) => [name, String(value)]));
    const record: Received = { method: req.method ?? 'GET', path, headers, body, at: Date.now(), status: 0 };
    received.push(record);
    const strikes = (f: Fault) => f.when === undefined || text.includes(f.when);
    const next = faults.findIndex(strikes);
    const fault = (next >= 0 ? faults.splice(next, 1)[0] : undefined) ?? (always && strikes(always) ? always : undefined);
    if (fault) {
      if (fault.delayMs) await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
      if (fault.drop) {
        req.socket.destroy();
        return;
      }
      if (fault.status !== undefined) {
        record.status = fault.status;
        record.answered = Date.now();
        return reply(fault.status, fault.body ?? { request_id: hex24(), code: fault.status, error: 'scripted failure' });
      }
    }
    if (options.emulatorUrl) {
      const forwarded = await fetch(`${options.emulatorUrl}${req.url}`, {
        method: req.method ?? 'GET',
        headers: { 'content-type': 'application/json', 'x-api-key': headers['x-api-key'] ?? '' },
        ...(req.method === 'GET' ? {} : { body: text }),
      });
      record.status = forwarded.status;
      const answered = await forwarded.text();
      record.answered = Date.now();
      if (fault?.lose) return void req.socket.destroy();
      if (fault?.stallBody) return stall(forwarded.status, answered);
      res.writeHead(forwarded.status, { 'content-type': 'application/json' });
      res.end(answered);
      return;
    }
    const answer = fake(path, headers, body);
    record.status = answer.status;
    record.answered = Date.now();
    if (fault?.lose) return void req.socket.destroy();
    if (fault?.stallBody) return stall(answer.status, JSON.stringify(answer.body));
    reply(answer.status, answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
