/**
 * Diagnose: what the deliverer's own JavaScript costs per platform call and per entry, apart from
 * the accept. Each round first accepts --items through POST /collect's handler into an outbox
 * (requests of --batch tracks from --visitors visitor addresses, 16 in flight; not measured), then
 * starts the relay's deliverer on it as the relay does (app/handoff.ts: its metrics, status page
 * and shapes told of every call) and measures from its start until the outbox is empty: CPU per
 * 100 items delivered, the bytes allocated on V8's heap per call (bench/lib/heap-alloc.ts, a count
 * the load does not move), platform calls and entries. The platform answers at once from a cache
 * in this process; --http sends the calls through the relay's undici pool to a no-op platform in a
 * child process instead (its CPU is not counted). --identifies: each request's first item is an
 * identify, so merge calls go too. --sqlite: the SQLite outbox and its pacer on a file (their
 * statements counted in with the deliverer's JavaScript). --profile DIR writes a CPU profile of
 * each round's delivery alone there; --sites N prints where a call's bytes are allocated (one more
 * round under the sampling heap profiler): the N largest files and functions.
 *
 *   npx tsx bench/diagnose/deliver-cost.ts [--items 20000] [--batch 10] [--visitors 100000] [--rounds 5] [--identifies] [--http] [--sqlite] [--profile DIR] [--sites N]
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { uuid } from '../../src/browser/uuid.js';
import { createRelayHandlers } from '../../src/relay/app.js';
import { chooseHandoff } from '../../src/relay/app/handoff.js';
import { systemClock } from '../../src/relay/core/clock.js';
import { parseConfig } from '../../src/relay/core/config.js';
import { createMemoryLimiter, withLimitAll } from '../../src/relay/core/limits.js';
import { observeAll } from '../../src/relay/core/observe.js';
import { createUpstream } from '../../src/relay/deliver/caller.js';
import type { Transport } from '../../src/relay/deliver/transport.js';
import { createUndiciTransport } from '../../src/relay/deliver/undici.js';
import { createShapes } from '../../src/relay/ingest/shapes.js';
import { createRelayMetrics } from '../../src/relay/ops/metrics.js';
import { createStatusRecorder } from '../../src/relay/ops/status.js';
import { createMemoryOutbox, createMemoryPacer } from '../../src/relay/state/memory-outbox.js';
import type { Outbox, Pacer } from '../../src/relay/state/outbox.js';
import { CATCH_UP_MS } from '../../src/relay/state/pace.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { benchTrack, collectRequest, visitorAddress } from '../lib/collect-request.js';
import { countAllocations, sampleAllocations, topSites } from '../lib/heap-alloc.js';

const { values } = parseArgs({
  options: {
    items: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '10' },
    visitors: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '5' },
    identifies: { type: 'boolean', default: false },
    http: { type: 'boolean', default: false },
    sites: { type: 'string' },
    sqlite: { type: 'boolean', default: false },
    profile: { type: 'string' },
  },
});
const ITEMS = Number(values.items);
const BATCH = Number(values.batch);
const VISITORS = Number(values.visitors);
const ORIGIN = 'https://shop.example.com';
const CONCURRENT = 16;

/** The no-op platform of --http: one `queued` per entry, in a process of its own. */
const PLATFORM = `
const http = require('node:http');
const answers = new Map();
http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString();
    const merge = req.url.endsWith('/person/merge');
    const count = body.split(merge ? '"fields":' : '"activity_id":').length - 1;
    const key = (merge ? 'm' : 'a') + count;
    let answer = answers.get(key);
    if (answer === undefined) {
      const one = merge ? { status: 'created' } : { status: 'queued', person_status: 'queued' };
      answer = Buffer.from(JSON.stringify({ [merge ? 'people' : 'activities']: Array.from({ length: count }, () => one) }));
      answers.set(key, answer);
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length });
    res.end(answer);
  });
}).listen(0, '127.0.0.1', function () { process.stdout.write(String(this.address().port) + '\\n'); });
`;

let platform: ChildProcess | undefined;
let baseUrl = 'http://127.0.0.1:9';
if (values.http) {
  platform = spawn(process.execPath, ['-e', PLATFORM], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => platform!.stdout!.once('data', (data: Buffer) => resolve(data.toString().trim())));
  baseUrl = `http://127.0.0.1:${port}`;
}

const config = parseConfig({
  CDP_API_KEY: 'bench-platform-key',
  CDP_BASE_URL: baseUrl,
  RELAY_LOG: 'off',
  // As collect.ts runs the relay in front of its no-op platform: leases of 1,000, calls as fast as they go.
  RELAY_PLATFORM_RATE: '1000',
  RELAY_TRUST_PROXY: '127.0.0.1',
  RELAY_SITES: JSON.stringify([{ key: 'pk_bench', origins: [ORIGIN], verify: 'open', visitor_rate_limit: { per_second: 1_000_000, burst: 1_000_000 } }]),
});

/** Calls and their bytes sent (counted by the transport), entries delivered (by the outcomes). */
const sent = { calls: 0, entries: 0, bytes: 0 };
const answers = new Map<string, Uint8Array<ArrayBuffer>>();
const encoder = new TextEncoder();
// The platform in this process: its answers cached by endpoint and count (their JSON work is not the relay's).
const instant: Transport = async ({ url, body }) => {
  const merge = url.endsWith('/person/merge');
  const text = body ?? '';
  let count = 0;
  for (let at = text.indexOf(merge ? '"fields":' : '"activity_id":'); at >= 0; at = text.indexOf(merge ? '"fields":' : '"activity_id":', at + 1)) count++;
  const key = `${merge ? 'm' : 'a'}${count}`;
  let answer = answers.get(key);
  if (answer === undefined) {
    const one = merge ? { status: 'created' } : { status: 'queued', person_status: 'queued' };
    answer = encoder.encode(JSON.stringify({ [merge ? 'people' : 'activities']: Array.from({ length: count }, () => one) }));
    answers.set(key, answer);
  }
  return { status: 200, contentType: 'application/json', retryAfter: undefined, body: answer };
};
const undici = values.http ? createUndiciTransport() : undefined;
const inner = undici ?? instant;
const transport: Transport = (request) => {
  sent.calls++;
  sent.bytes += request.body?.length ?? 0;
  return inner(request);
};

let serial = 0;
let visitor = 0;
const bodyOf = () => {
  const ts = new Date().toISOString();
  return JSON.stringify({
    key: 'pk_bench',
    sent_at: ts,
    batch: Array.from({ length: BATCH }, (_, i) => {
      const n = serial++;
      if (values.identifies && i === 0) return { id: uuid(), type: 'identify', ts, fields: { 'str::email': `u${n}@bench.example.com`, 'str::first': 'Bench' } };
      return benchTrack(n, ts);
    }),
  });
};
const requestOf = (text: string) => collectRequest(ORIGIN, text);
const address = () => visitorAddress(visitor++ % VISITORS);

const dir = values.sqlite ? mkdtempSync(join(tmpdir(), 'cdp-deliver-cost-')) : undefined;
const store = dir === undefined ? undefined : await createSqliteOutbox(join(dir, 'relay-state.db'));
const outbox: Outbox = store?.outbox ?? createMemoryOutbox();
const pacer: Pacer = store?.pacer(config.platformRate) ?? createMemoryPacer(config.platformRate, CATCH_UP_MS);
const metrics = createRelayMetrics({ outbox, limits: config.outboxLimits });
const status = createStatusRecorder();
// Entries delivered, as the calls' outcomes tell them.
const observer = observeAll(metrics.observer, status.observer, {
  delivery: (event) => {
    sent.entries += event.delivered;
  },
});
// Accepting: the relay's handler without a deliverer, into the outbox the deliverer drains.
const accepting = createRelayHandlers(config, { transport, logger: () => {}, observer, metrics, outbox, pacer, deliver: false });
const shapes = createShapes();
const limiter = withLimitAll(createMemoryLimiter());
const upstream = createUpstream({
  baseUrl: config.baseUrl,
  apiKey: config.apiKey,
  transport,
  timeoutMs: Math.max(500, Math.min(10_000, config.budgetMs)),
  backoff: { until: 0 },
  now: () => Date.now(),
  onCall: observer.upstream,
  pacer,
});

async function accept(items: number): Promise<void> {
  const bodies = Array.from({ length: Math.ceil(items / BATCH) }, bodyOf);
  let next = 0;
  let refused = 0;
  await Promise.all(
    Array.from({ length: CONCURRENT }, async () => {
      while (next < bodies.length) {
        const answer = await accepting.collect(requestOf(bodies[next++]!), { ip: address() });
        if (answer.status !== 200) refused++;
      }
    }),
  );
  if (refused > 0) throw new Error(`${refused} requests not accepted`);
}

const session = values.profile === undefined ? undefined : new Session();
if (session !== undefined) {
  session.connect();
  mkdirSync(values.profile!, { recursive: true });
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
}
let profiled = 0;

interface Figures {
  ms: number;
  calls: number;
  entries: number;
  bytesPerCall: number;
  allocatedPerCall: number;
}

/** Delivers what the outbox holds with a fresh deliverer, as the relay's; the figures per 100 items and per call. */
async function deliver(): Promise<Figures> {
  const items = (await outbox.stats()).pending;
  const from = { ...sent };
  await session?.post('Profiler.start');
  const allocated = countAllocations();
  const before = process.cpuUsage();
  const { deliverer } = chooseHandoff({ config, limiter, upstream, pacer, clock: systemClock, observer, logger: () => {}, outbox, shapes });
  await deliverer!.drained({ timeoutMs: 120_000 });
  const used = process.cpuUsage(before);
  const { bytes } = allocated();
  if (session !== undefined) {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(join(values.profile!, `deliver-${++profiled}.cpuprofile`), JSON.stringify(profile));
  }
  await deliverer!.stop();
  const calls = sent.calls - from.calls;
  const entries = sent.entries - from.entries;
  if (entries !== items) throw new Error(`${entries} entries delivered of the ${items} the outbox held`);
  return {
    ms: (used.user + used.system) / 1000 / (items / 100),
    calls,
    entries,
    bytesPerCall: (sent.bytes - from.bytes) / calls,
    allocatedPerCall: bytes / calls,
  };
}

await accept(Math.ceil(ITEMS / 5));
await deliver(); // warm-up
const rounds: Figures[] = [];
for (let i = 0; i < Number(values.rounds); i++) {
  await accept(ITEMS);
  rounds.push(await deliver());
}
const sorted = rounds.map((round) => round.ms).sort((a, b) => a - b);
const last = rounds[rounds.length - 1]!;
const allocs = rounds.map((round) => round.allocatedPerCall).sort((a, b) => a - b);
console.log(
  `deliverer CPU per 100 items: best ${sorted[0]!.toFixed(3)} ms, median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(3)} (rounds ${rounds.map((round) => round.ms.toFixed(3)).join(' / ')}); ` +
    `allocated per call median ${(allocs[Math.floor(allocs.length / 2)]! / 1024).toFixed(1)} kB (rounds ${rounds.map((round) => (round.allocatedPerCall / 1024).toFixed(1)).join(' / ')}); ` +
    `${last.calls} calls of ${(last.entries / last.calls).toFixed(1)} entries, ${Math.round(last.bytesPerCall)} B a body; ` +
    `${last.entries} items a round in requests of ${BATCH}${values.identifies ? ' (an identify first)' : ''}, ${values.http ? 'undici to a no-op platform' : 'answered in process'}, ${store === undefined ? 'memory' : 'SQLite'} outbox; load average ${loadavg()[0]!.toFixed(2)}`,
);
if (values.sites !== undefined) {
  // One more round under the sampling heap profiler: where the bytes of a call are allocated.
  await accept(ITEMS);
  let calls = 0;
  const sites = await sampleAllocations(async () => {
    calls = (await deliver()).calls;
  });
  console.log(`allocated per call, by file:\n${topSites(sites.files, Number(values.sites), calls).join('\n')}`);
  console.log(`by function (self):\n${topSites(sites.self, Number(values.sites), calls).join('\n')}`);
}
session?.disconnect();
await accepting.close();
await undici?.close();
platform?.kill();
await store?.close();
if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
