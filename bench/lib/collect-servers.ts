/**
 * The servers of bench/collect.ts, each started in a process of its own (`collect.ts <role> <upstream
 * port>`): the platforms (a no-op one and the emulator), the bare pass-through, and the rungs of
 * its ladder (`--ladder`) between the pass-through and the relay, each doing a little more of what
 * the relay does for a `/collect` of tracks, measured as the relay and the pass-through are (CPU per
 * 100 items, requests/s, p99):
 *  - read     reads the body and answers a fixed small JSON: node:http's own floor beside piping;
 *  - parse    + `JSON.parse` of the body and an answer of the relay's shape, one result per item
 *             (src/api `CollectAnswer`);
 *  - forward  parse, then the items sent on as the relay sends them: each track made the platform
 *             entry it becomes and serialised, one `activities/create` call per 100 entries (10
 *             requests of 10) through the relay's own transport (`createUndiciTransport` from the
 *             built dist/), its answer read and parsed: one joined call beside the pass-through's ten.
 * The relay without its outbox, on the memory store and on SQLite are relay-role.mjs's `relay`.
 */
import { Agent, createServer, type IncomingMessage, request as httpRequest, type ServerResponse } from 'node:http';
import type { CollectAnswer } from '../../src/api/collect.js';
import type { UndiciTransport } from '../../src/relay/node.js';
import { serveRole } from './children.js';
import { listen, readBody } from './http.js';

export const PLATFORM_KEY = 'bench-platform-key';
/** The activity of every track (the emulator's role defines it). */
export const ACTIVITY = 'act:cm:bench';

const ROLES = ['noop', 'emulator', 'bare', 'read', 'parse', 'forward'] as const;
export type ServerRole = (typeof ROLES)[number];
type Rung = 'read' | 'parse' | 'forward';
export const isServerRole = (role: string | undefined): role is ServerRole => ROLES.includes(role as ServerRole);

/** activities/create calls the no-op platform has taken, and the activities in them */
let noopCalls = 0;
let noopItems = 0;

/** A platform that does nothing: one `queued` result per activity, at once. */
async function startNoop(): Promise<number> {
  return listen(
    createServer(async (req, res) => {
      const text = await readBody(req);
      if (req.url === '/v1/activities/create') noopCalls += 1;
      if (req.headers['x-api-key'] !== PLATFORM_KEY)
        return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"code":401,"error":"bad key"}');
      const count = req.url === '/v1/activities/create' ? ((JSON.parse(text) as { activities?: unknown[] }).activities?.length ?? 0) : 0;
      noopItems += count;
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ activities: Array.from({ length: count }, () => ({ status: 'queued', person_status: 'queued' })) }));
    }),
  );
}

async function startEmulatorRole(): Promise<number> {
  const { startEmulator } = await import('../../src/emulator/node.js');
  const emulator = await startEmulator({ port: 0, key: PLATFORM_KEY, plan: 'business' });
  const created = await fetch(`${emulator.url}/v1/definitions/activity/create`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': PLATFORM_KEY },
    body: JSON.stringify({ name: 'bench', attributes: [{ name: 'plan', display_type: 'text' }] }),
  });
  if (!created.ok) throw new Error(`seeding ${ACTIVITY}: ${created.status} ${await created.text()}`);
  return emulator.port;
}

/** The floor: a pass-through that adds the platform key and pipes the body and the answer. */
async function startBare(upstreamPort: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  return listen(
    createServer((req, res) => {
      const headers = { ...req.headers, host: `127.0.0.1:${upstreamPort}`, 'x-api-key': PLATFORM_KEY };
      const out = httpRequest({ host: '127.0.0.1', port: upstreamPort, method: 'POST', path: '/v1/activities/create', headers, agent }, (upstream) => {
        res.writeHead(upstream.statusCode ?? 502, { 'content-type': upstream.headers['content-type'] ?? 'application/json' });
        upstream.pipe(res);
      });
      out.on('error', () => res.writeHead(502).end());
      req.pipe(out);
    }),
  );
}

/** The relay's window in the answer, as it sends it (seconds, 7 days by default). */
const WINDOW_S = 7 * 24 * 3600;
/** Entries in one platform call, as the relay's deliverer fills them at saturation. */
const CALL_ENTRIES = 100;
/** A call that is not full leaves this long after its first entry came, as the relay's deliverer waits to fill one (RELAY_DELIVERY_WAIT_MS). */
const FLUSH_MS = 250;
const FIXED = '{"ok":true}';

interface Track {
  id: string;
  ts?: string;
  activity_id?: string;
  attributes?: unknown;
  person?: unknown;
}

const answer = (res: ServerResponse, text: string) =>
  void res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);

/** One result per item, as the relay answers an accepted batch. */
function answerItems(res: ServerResponse, batch: Track[]): void {
  const body: CollectAnswer = { results: batch.map((item) => ({ id: item.id, status: 'accepted' })), window: WINDOW_S };
  answer(res, JSON.stringify(body));
}

/** Sends entries as the relay's deliverer does: joined into calls of {@link CALL_ENTRIES}. */
function createForwarder(upstreamPort: number, transport: UndiciTransport) {
  const url = `http://127.0.0.1:${upstreamPort}/v1/activities/create`;
  const headers = { 'content-type': 'application/json', 'x-api-key': PLATFORM_KEY };
  let waiting: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  const send = (entries: string[]) =>
    void transport({ method: 'POST', url, headers, body: `{"activities":[${entries.join(',')}]}`, timeoutMs: 10_000 })
      .then((reply) => {
        // The relay reads each entry's status from the answer.
        if (reply.body instanceof Uint8Array) JSON.parse(Buffer.from(reply.body).toString('utf8'));
      })
      .catch((error: unknown) => console.error('ladder forward:', error));
  const flush = () => {
    timer = undefined;
    if (waiting.length > 0) send(waiting.splice(0));
  };
  return (entries: string[]) => {
    for (const entry of entries) waiting.push(entry);
    while (waiting.length >= CALL_ENTRIES) {
      send(waiting.slice(0, CALL_ENTRIES));
      waiting = waiting.slice(CALL_ENTRIES);
    }
    if (waiting.length > 0 && timer === undefined) timer = setTimeout(flush, FLUSH_MS);
  };
}

/** Starts `rung` on a free loopback port (forward: in front of the platform on `upstreamPort`). */
async function startRung(rung: Rung, upstreamPort: number): Promise<number> {
  let forward: ((entries: string[]) => void) | undefined;
  if (rung === 'forward') {
    const { createUndiciTransport } = (await import(new URL('../../dist/relay/node.js', import.meta.url).href)) as typeof import('../../src/relay/node.js');
    forward = createForwarder(upstreamPort, createUndiciTransport());
  }
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const text = await readBody(req);
    if (rung === 'read') return answer(res, FIXED);
    const { batch } = JSON.parse(text) as { batch: Track[] };
    answerItems(res, batch);
    forward?.(batch.map((item) => JSON.stringify({ activity_id: item.activity_id, fields: item.person, attributes: item.attributes, created: item.ts })));
  };
  return listen(
    createServer((req, res) => {
      handle(req, res).catch(() => res.writeHead(400).end());
    }),
  );
}

/** In the child: starts `role` and answers the bench's questions (CPU, and the platform's calls and items). */
export async function serveServer(role: ServerRole, upstreamPort: number): Promise<void> {
  const starts: Record<ServerRole, (upstreamPort: number) => Promise<number>> = {
    noop: startNoop,
    emulator: startEmulatorRole,
    bare: startBare,
    read: (port) => startRung('read', port),
    parse: (port) => startRung('parse', port),
    forward: (port) => startRung('forward', port),
  };
  const start = starts[role];
  await serveRole(
    () => start(upstreamPort),
    () => noopCalls,
    () => noopItems,
  );
}
