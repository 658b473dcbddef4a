/**
 * Benchmark: the relay's `/collect` on Node beside a bare pass-through, in front of the emulator
 * and in front of a no-op platform, for information: the targets against a bare pass-through are
 * retired (a relay that checks and keeps state cannot match a proxy that does neither). What
 * limits a deployment is the platform's ceiling and what it costs is the relay's CPU per item,
 * both measured on the snippet's traffic by bench/delivery.ts. Target kept here: RSS under load.
 *
 *   npm run build && npx tsx bench/collect.ts [--concurrency 16] [--rounds 3] [--scale 1]
 *
 * Separate processes on loopback: this load generator, the upstream (the emulator, or a no-op
 * node:http platform answering `activities/create` at once), and the server under test:
 *  - relay  startRelay as `npx cdp-edge relay` runs it: the built dist/ on plain Node, no TypeScript
 *           loader (bench/lib/relay-role.mjs; run `npm run build` first) (SQLite state file,
 *           metrics on, request logging off): envelope and item checks, enrichment, dedupe, the
 *           platform call through the relay's pooled upstream caller, per-item results;
 *  - bare   a node:http pass-through doing only the key swap: it pipes an already platform-shaped
 *           `activities/create` body (the same events) upstream with X-Api-Key added.
 * For 1-, 10- and 100-item batches: requests/s, p50/p99 and CPU per request of the server under
 * test, medians of alternating rounds. Every item id is fresh (the relay would answer duplicates
 * without calling the platform) and every person distinct (the emulator caps 50 events per
 * activity per person a day). Prints a table and writes bench/results/collect.json.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request as httpRequest } from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { uuid } from '../src/browser/uuid.js';
import { serveRole, spawnRole, type Child } from './lib/children.js';
import { listen, readBody } from './lib/http.js';

const PLATFORM_KEY = 'bench-platform-key';
const SITE_KEY = 'pk_bench';
const ORIGIN = 'https://shop.example.com';
const ACTIVITY = 'act:cm:bench';
const BATCHES = [1, 10, 100] as const;
/** requests per round for each batch size at --scale 1 (about the same number of events each) */
const REQUESTS: Record<(typeof BATCHES)[number], number> = { 1: 1200, 10: 500, 100: 100 };

type Role = 'noop' | 'emulator' | 'relay' | 'bare';

/** activities/create calls the no-op platform has taken */
let noopCalls = 0;

/** A platform that does nothing: one `queued` result per activity, at once. */
async function startNoop(): Promise<number> {
  return listen(
    createServer(async (req, res) => {
      const text = await readBody(req);
      if (req.url === '/v1/activities/create') noopCalls += 1;
      if (req.headers['x-api-key'] !== PLATFORM_KEY)
        return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"code":401,"error":"bad key"}');
      const count = req.url === '/v1/activities/create' ? ((JSON.parse(text) as { activities?: unknown[] }).activities?.length ?? 0) : 0;
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ activities: Array.from({ length: count }, () => ({ status: 'queued', person_status: 'queued' })) }));
    }),
  );
}

async function startEmulatorRole(): Promise<number> {
  const { startEmulator } = await import('../src/emulator/node.js');
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

const spawn = (which: Role, upstreamPort = 0) =>
  which === 'relay'
    ? // The built relay on plain Node: what users run, without tsx's loader in its memory and CPU.
      spawnRole(
        new URL('./lib/relay-role.mjs', import.meta.url).pathname,
        [
          'relay',
          String(upstreamPort),
          JSON.stringify({
            key: PLATFORM_KEY,
            sites: [{ key: SITE_KEY, origins: [ORIGIN], verify: 'open', visitor_rate_limit: { per_second: 1_000_000, burst: 1_000_000 } }],
          }),
        ],
        { plain: true },
      )
    : spawnRole(new URL(import.meta.url).pathname, [which, String(upstreamPort)]);

interface Figures {
  requests: number;
  errors: number;
  /** items the server under test did not answer `accepted` (relay) or the platform did not queue (bare) */
  items_not_accepted: number;
  rps: number;
  events_per_second: number;
  p50_ms: number;
  p99_ms: number;
  cpu_us_per_request: number;
  /** CPU of the server under test per 100 items forwarded */
  cpu_ms_per_100_items: number;
  /** the server's resident set size right after the round */
  rss_mb: number;
  /** activities/create calls the platform got per 100 items (the platform limits calls per second, not items) */
  platform_calls_per_100_items: number;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
const round2 = (n: number) => Math.round(n * 100) / 100;

const newId = process.env['BENCH_ID_KIND'] === 'v4' ? () => crypto.randomUUID() : uuid;
let serial = 0;
/** `items` events, each with a fresh id and person. */
function events(items: number) {
  return Array.from({ length: items }, () => {
    const n = serial++;
    return {
      // Ids as the snippet makes them: time-ordered v7 UUIDs (BENCH_ID_KIND=v4: random ones, as a
      // client with its own ids might send; they land all over the store's table).
      id: newId(),
      ts: new Date().toISOString(),
      activity_id: ACTIVITY,
      attributes: { 'str:cm:plan': 'pro' },
      email: `u${n}@bench.example.com`,
    };
  });
}
const collectBody = (items: number) =>
  JSON.stringify({
    key: SITE_KEY,
    sent_at: new Date().toISOString(),
    batch: events(items).map((e) => ({
      id: e.id,
      type: 'track',
      ts: e.ts,
      activity_id: e.activity_id,
      attributes: e.attributes,
      person: { 'str::email': e.email },
    })),
  });
const platformBody = (items: number) =>
  JSON.stringify({
    activities: events(items).map((e) => ({ activity_id: e.activity_id, fields: { 'str::email': e.email }, attributes: e.attributes, created: e.ts })),
  });

function countNotAccepted(target: 'relay' | 'bare', status: number, text: string, items: number): number {
  if (status !== 200) return items;
  try {
    if (target === 'relay') return (JSON.parse(text) as { results: { status: string }[] }).results.filter((r) => r.status !== 'accepted').length;
    return items - (JSON.parse(text) as { activities: { status: string }[] }).activities.filter((a) => a.status === 'queued').length;
  } catch {
    return items;
  }
}

/** `total` requests, `concurrency` in flight, bodies made ahead so the generator's own work is not timed. */
async function load(target: 'relay' | 'bare', server: Child, platform: Child, items: number, total: number, concurrency: number): Promise<Figures> {
  const bodies = Array.from({ length: total }, () => (target === 'relay' ? collectBody(items) : platformBody(items)));
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const one = (body: string) =>
    new Promise<{ status: number; text: string }>((resolve) => {
      const headers = { 'content-type': target === 'relay' ? 'text/plain' : 'application/json', origin: ORIGIN, 'content-length': Buffer.byteLength(body) };
      const req = httpRequest({ host: '127.0.0.1', port: server.port, method: 'POST', path: '/collect', headers, agent }, async (res) =>
        resolve({ status: res.statusCode ?? 0, text: await readBody(res) }),
      );
      req.setTimeout(30_000, () => req.destroy());
      req.on('error', () => resolve({ status: 0, text: '' }));
      req.end(body);
    });
  let next = 0;
  let errors = 0;
  let notAccepted = 0;
  const latencies: number[] = [];
  const cpuBefore = await server.cpu();
  const callsBefore = await platform.calls();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const body = bodies[next++]!;
        const t0 = performance.now();
        const { status, text } = await one(body);
        latencies.push(performance.now() - t0);
        if (status !== 200) errors += 1;
        notAccepted += countNotAccepted(target, status, text, items);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = await server.cpu();
  const rss = await server.rss();
  const calls = (await platform.calls()) - callsBefore;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    requests: total,
    errors,
    items_not_accepted: notAccepted,
    rps: Math.round(total / seconds),
    events_per_second: Math.round((total * items) / seconds),
    p50_ms: round2(percentile(latencies, 50)),
    p99_ms: round2(percentile(latencies, 99)),
    cpu_us_per_request: Math.round((cpuAfter - cpuBefore) / total),
    cpu_ms_per_100_items: round2((cpuAfter - cpuBefore) / 1000 / ((total * items) / 100)),
    rss_mb: Math.round(rss / 1024 / 1024),
    platform_calls_per_100_items: round2(calls / ((total * items) / 100)),
  };
}

const median = (rounds: Figures[]): Figures => [...rounds].sort((a, b) => a.rps - b.rps)[Math.floor(rounds.length / 2)]!;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { concurrency: { type: 'string', default: '16' }, rounds: { type: 'string', default: '3' }, scale: { type: 'string', default: '1' } },
  });
  const concurrency = Number(values.concurrency);
  const rounds = Number(values.rounds);
  const scale = Number(values.scale);
  if (![concurrency, rounds, scale].every((n) => Number.isFinite(n) && n > 0))
    throw new RangeError('--concurrency, --rounds and --scale must be positive numbers');
  const loadBefore = loadavg()[0]!;
  const children: ChildProcess[] = [];
  const results: Record<string, unknown>[] = [];
  try {
    const upstreams = { noop: await spawn('noop'), emulator: await spawn('emulator') };
    children.push(upstreams.noop.child, upstreams.emulator.child);
    const servers = {
      noop: { relay: await spawn('relay', upstreams.noop.port), bare: await spawn('bare', upstreams.noop.port) },
      emulator: { relay: await spawn('relay', upstreams.emulator.port), bare: await spawn('bare', upstreams.emulator.port) },
    };
    for (const pair of Object.values(servers)) children.push(pair.relay.child, pair.bare.child);

    for (const items of BATCHES) {
      const total = Math.max(10, Math.round(REQUESTS[items] * scale));
      const row: Record<string, unknown> = { items, requests_per_round: total };
      for (const upstream of ['noop', 'emulator'] as const) {
        const measured: Record<'relay' | 'bare', Figures[]> = { relay: [], bare: [] };
        const platform = upstreams[upstream];
        for (const target of ['bare', 'relay'] as const) await load(target, servers[upstream][target], platform, items, Math.ceil(total / 5), concurrency); // warm-up
        for (let round = 0; round < rounds; round++) {
          for (const target of ['bare', 'relay'] as const)
            measured[target].push(await load(target, servers[upstream][target], platform, items, total, concurrency));
        }
        const relay = median(measured.relay);
        const bare = median(measured.bare);
        row[`relay_${upstream}`] = relay;
        row[`bare_${upstream}`] = bare;
        row[upstream === 'noop' ? 'ratio' : 'ratio_emulator'] = round2(relay.rps / bare.rps);
        if (upstream === 'noop') {
          row['p99_ratio'] = round2(relay.p99_ms / bare.p99_ms);
          row['rss_mb'] = Math.max(...measured.relay.map((figures) => figures.rss_mb));
        }
      }
      results.push(row);
    }
  } finally {
    for (const child of children) child.kill();
  }

  const report = {
    benchmark: 'collect',
    date: new Date().toISOString(),
    node: process.version,
    cpus: availableParallelism(),
    concurrency,
    rounds,
    target_rss_mb: 150,
    load_average_1m: { before: round2(loadBefore), after: round2(loadavg()[0]!) },
    store: process.env['BENCH_REDIS_URL'] ? 'Redis' : 'SQLite file (the CLI default)',
    item_ids: process.env['BENCH_ID_KIND'] === 'v4' ? 'random v4 UUIDs' : 'v7 UUIDs, as the snippet makes them',
    what: 'relay = startRelay from the built dist/ on plain Node (Node entry, its default undici-pool transport, joined platform calls, the CLI default SQLite state, request logging off) handling POST /collect of track items; bare = node:http pass-through adding X-Api-Key to the same events already shaped for activities/create. ratio = relay rps / bare rps against the no-op platform (medians of alternating rounds); ratio_emulator the same against the emulator.',
    results,
  };
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/collect.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);

  const f = (x: unknown) => x as Figures;
  console.table(
    results.map((row) => ({
      items: row['items'],
      'bare→noop rps': f(row['bare_noop']).rps,
      'relay→noop rps': f(row['relay_noop']).rps,
      ratio: row['ratio'],
      'relay→noop p99 ms': f(row['relay_noop']).p99_ms,
      'bare→emu rps': f(row['bare_emulator']).rps,
      'relay→emu rps': f(row['relay_emulator']).rps,
      'ratio emu': row['ratio_emulator'],
      'relay→emu p99 ms': f(row['relay_emulator']).p99_ms,
      'relay CPU ms/100 items': f(row['relay_noop']).cpu_ms_per_100_items,
      'bare CPU ms/100 items': f(row['bare_noop']).cpu_ms_per_100_items,
      'relay RSS MB': row['rss_mb'],
      'platform calls/100 items relay': f(row['relay_noop']).platform_calls_per_100_items,
      bare: f(row['bare_noop']).platform_calls_per_100_items,
      'not accepted': f(row['relay_noop']).items_not_accepted + f(row['relay_emulator']).items_not_accepted,
    })),
  );
  console.log('wrote bench/results/collect.json');
  const failed = results.some(
    (row) => f(row['relay_noop']).errors + f(row['relay_emulator']).errors + f(row['bare_noop']).errors + f(row['bare_emulator']).errors > 0,
  );
  if (failed) {
    console.error('! some requests failed; see errors in bench/results/collect.json');
    process.exitCode = 1;
  }
}

// Last, so every declaration above exists before a role or the load generator runs.
const role = process.argv[2] as Role | undefined;
if (role === 'noop' || role === 'emulator' || role === 'bare') {
  const upstreamPort = Number(process.argv[3] ?? 0);
  const start = { noop: startNoop, emulator: startEmulatorRole, bare: startBare }[role];
  await serveRole(
    () => start(upstreamPort),
    () => noopCalls,
  );
} else {
  await main();
}
