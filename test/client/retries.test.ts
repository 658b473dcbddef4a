// The client never applies a call twice. In front of the real emulator sits a lossy hop (real
// HTTP both ways) that can apply a call and then lose its answer (drop the connection, answer
// late, answer 500), or refuse it without passing it on (503, 429). What the emulator holds
// afterwards shows how often each call was applied.
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ENDPOINT_LIST, ENDPOINTS } from '../../src/api/index.js';
import { createClient, HTTPError, MaybeAppliedError, NetworkError, TimeoutError } from '../../src/client/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';

const KEY = 'retries-key';
/** What the hop does with the next calls, in order; then it passes calls through. */
type Mishap = 'drop-after-applying' | 'late-after-applying' | '500-after-applying' | '503-unapplied' | '429-unapplied';

let emulator: RunningEmulator;
let hop: Server;
let hopUrl = '';
let mishaps: Mishap[] = [];
/** calls that reached the emulator */
let applied = 0;
let arrived = 0;

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, key: KEY });
  const created = await fetch(`${emulator.url}/v1/definitions/activity/create`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'retried' }),
  });
  expect(created.status).toBe(200);
  hop = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      arrived++;
      const mishap = mishaps.shift();
      if (mishap === '503-unapplied') return void res.writeHead(503, { 'content-type': 'application/json' }).end('{"code":503,"error":"unavailable"}');
      if (mishap === '429-unapplied')
        return void res.writeHead(429, { 'content-type': 'application/json' }).end('{"error":{"code":"rate-limit","message":"slow down","try-in-seconds":0}}');
      const target = new URL(req.url ?? '/', emulator.url);
      const forward = httpRequest(target, { method: req.method, headers: req.headers }, (answer) => {
        const body: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => body.push(chunk));
        answer.on('end', () => {
          applied++;
          if (mishap === 'drop-after-applying') return void req.socket.destroy();
          if (mishap === '500-after-applying') return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"code":500,"error":"boom"}');
          const reply = () => res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(body));
          if (mishap === 'late-after-applying') setTimeout(reply, 400);
          else reply();
        });
      });
      forward.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => hop.listen(0, '127.0.0.1', resolve));
  hopUrl = `http://127.0.0.1:${(hop.address() as AddressInfo).port}`;
});
afterAll(async () => {
  hop?.closeAllConnections();
  await new Promise((resolve) => hop?.close(resolve));
  await emulator?.close();
});
beforeEach(() => {
  mishaps = [];
  applied = 0;
  arrived = 0;
});

/**
 * The client's timeout: short only where the answer is late on purpose (400 ms after applying), so
 * it runs out first; elsewhere long, so a loaded machine's slow platform is not taken for a timeout.
 */
const timeoutFor = (mishap: Mishap) => (mishap === 'late-after-applying' ? 200 : 5_000);
const client = (timeout = 5_000) => createClient({ apiKey: KEY, baseUrl: hopUrl, timeout, retry: { limit: 3, backoffLimit: 20 } });
const eventsOf = (email: string) =>
  [...emulator.emulator.state.people.values()].filter((person) => person.fields['str::email'] === email).flatMap((person) => person.events);
const peopleNamed = (email: string) => [...emulator.emulator.state.people.values()].filter((person) => person.fields['str::email'] === email);
const activity = (email: string) => ({ activities: [{ activity_id: 'act:cm:retried', fields: { 'str::email': email } }] });

describe('activities/create (not idempotent): never sent again after an ambiguous failure', () => {
  it.each([
    ['the connection drops after the platform applied it', 'drop-after-applying', NetworkError],
    ['the answer comes after the timeout', 'late-after-applying', TimeoutError],
    ['the answer is a 500 after the platform applied it', '500-after-applying', HTTPError],
  ] as const)('%s: MaybeAppliedError, one call, the event recorded once', async (_, mishap, Cause) => {
    const email = `${mishap}@example.com`;
    mishaps = [mishap];
    const error = await client(timeoutFor(mishap))
      .activities.create(activity(email))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MaybeAppliedError);
    expect((error as MaybeAppliedError).endpoint).toBe('activities/create');
    expect((error as Error).cause).toBeInstanceOf(Cause);
    expect((error as Error).message).toContain('may have applied');
    expect(arrived).toBe(1);
    expect(eventsOf(email)).toHaveLength(1);
  });

  it.each([
    ['a 503 (the platform did not take it)', '503-unapplied'],
    ['a 429 with try-in-seconds', '429-unapplied'],
  ] as const)('after %s it is sent again and recorded once', async (_, mishap) => {
    const email = `${mishap}@example.com`;
    mishaps = [mishap];
    await client().activities.create(activity(email));
    expect(arrived).toBe(2);
    expect(eventsOf(email)).toHaveLength(1);
  });

  it('a connection that was never made is retried, and is a NetworkError, not MaybeAppliedError', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    let attempts = 0;
    const counting: typeof fetch = (input, init) => {
      attempts++;
      return fetch(input, init);
    };
    const refused = createClient({ apiKey: KEY, baseUrl: url, fetch: counting, retry: { limit: 2, backoffLimit: 10 } });
    const error = await refused.activities.create(activity('refused@example.com')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).not.toBeInstanceOf(MaybeAppliedError);
    expect(attempts).toBe(3);
  });
});

describe('idempotent calls are retried after an ambiguous failure', () => {
  it.each([
    ['a dropped connection', 'drop-after-applying'],
    ['a late answer', 'late-after-applying'],
    ['a 500', '500-after-applying'],
  ] as const)('person/merge after %s: sent again, one person', async (_, mishap) => {
    const email = `merge-${mishap}@example.com`;
    mishaps = [mishap];
    const answer = await client(timeoutFor(mishap)).person.merge({ people: [{ fields: { 'str::email': email, 'str::first': 'Ida' } }] });
    expect(answer.people?.[0]).toMatchObject({ status: expect.stringMatching(/created|merged/) });
    expect(arrived).toBe(2);
    expect(applied).toBe(2);
    expect(peopleNamed(email)).toHaveLength(1);
  });

  it('person/get after a 500: sent again and answered', async () => {
    mishaps = ['500-after-applying'];
    await expect(client().person.get({ limit: 1 })).resolves.toBeDefined();
    expect(arrived).toBe(2);
  });
});

describe('the create-definition calls are not idempotent either', () => {
  it('definitions/activity/create after a 500: MaybeAppliedError, and the definition exists once', async () => {
    mishaps = ['500-after-applying'];
    await expect(client().definitions.createActivity({ name: 'made-once' })).rejects.toBeInstanceOf(MaybeAppliedError);
    expect(arrived).toBe(1);
    expect([...emulator.emulator.state.activities.keys()].filter((id) => id === 'act:cm:made-once')).toHaveLength(1);
  });
});

describe("the retry table in docs/client.md is the endpoint table's", () => {
  it('lists every endpoint with whether it is retried after an ambiguous failure', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'client.md'), 'utf8');
    const rows = new Map([...doc.matchAll(/^\| `([a-z/-]+)` \| (yes|no) \|/gm)].map((match) => [match[1]!, match[2] === 'yes'] as const));
    expect(rows.size).toBe(ENDPOINT_LIST.length);
    for (const endpoint of ENDPOINT_LIST) expect([endpoint.id, rows.get(endpoint.id)]).toEqual([endpoint.id, ENDPOINTS[endpoint.id].idempotent]);
  });
});
