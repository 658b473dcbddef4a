/**
 * Benchmark: the relay's `/collect` on Node beside a bare pass-through, in front of the emulator
 * and in front of a no-op platform. Targets, at batches of 10 against the no-op platform in the
 * same run: the relay's CPU per 100 items (accept and deliver) ≤ 2.2× the bare pass-through's, and
 * its requests/s ≥ 0.6× the bare's; RSS under load.
 *
 *   npm run build && npx tsx bench/collect.ts [--concurrency 16] [--rounds 3] [--scale 1] [--addresses 100000] [--batches 1,10,100] [--upstreams noop,emulator] [--warmup 0.2] [--ladder] [--rate 100]
 *
 * --rate N: each server gets N requests a second on a clock (an open loop, as pages send) instead
 * of --concurrency at a time, and the results go to bench/results/collect-paced.json: what an item
 * costs at a site's pace, where each request meets an idle server, beside the bare's at the same
 * pace (no targets of its own; the saturation targets are judged from collect.json).
 *
 * Separate processes on loopback: this load generator, the upstream (the emulator, or a no-op
 * node:http platform answering `activities/create` at once), and the server under test:
 *  - relay  startRelay as `npx cdp-edge relay` runs it: the built dist/ on plain Node, no TypeScript
 *           loader (bench/lib/relay-role.mjs; run `npm run build` first) (SQLite state file,
 *           metrics on, one log line a request as by default): envelope and item checks,
 *           enrichment, dedupe, the platform call through the relay's pooled upstream caller, per-item results;
 *  - bare   a node:http pass-through doing only the key swap: it pipes an already platform-shaped
 *           `activities/create` body (the same events) upstream with X-Api-Key added.
 * --ladder: at each batch size against the no-op platform, the servers between them too, each in its
 * own process and measured in the same rounds: read (the body read, a fixed answer), parse (+ its
 * parse and an answer per item), forward (parse, and one platform call per 100 items through the
 * relay's transport; bench/lib/collect-servers.ts), checks (the built relay handing its items to a
 * queue that keeps nothing: no outbox, no deliverer), memory (the built relay on its memory store).
 * For 1-, 10- and 100-item batches: requests/s, p50/p99 and CPU per request of the server under
 * test, and its CPU in cores while it answers (a closed loop: a server below one core is waiting
 * on something else, for the relay on SQLite its commits' syncs), medians of alternating rounds, after --warmup rounds' worth of requests to each server
 * (a fifth of one; on a busy machine a small server's code is still being optimised for several
 * rounds). Each request comes from the next of --addresses visitors
 * (`X-Forwarded-For`, which the relay believes from loopback). Against the no-op platform the
 * relay may make NOOP_PLATFORM_RATE calls a second, and its CPU is read once the platform has
 * every item it accepted: what accepting and delivering an item cost, as the bare one's does.
 * Every item id is fresh (the relay would answer duplicates without calling the platform) and
 * every person distinct (the emulator caps 50 events per activity per person a day). Prints a
 * table and writes bench/results/collect.json.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { uuid } from '../src/browser/uuid.js';
import { spawnRole, type Child } from './lib/children.js';
import { readBody } from './lib/http.js';
import { ACTIVITY, isServerRole, PLATFORM_KEY, type ServerRole, serveServer } from './lib/collect-servers.js';

const SITE_KEY = 'pk_bench';
const ORIGIN = 'https://shop.example.com';
const BATCHES = [1, 10, 100] as const;
/**
 * Requests per round for each batch size at --scale 1. Against the no-op platform, enough that
 * the bare pass-through's round lasts a fair part of a second (with 500 requests of 10 it lasted
 * 50 ms idle, and its CPU per 100 items, the denominator of the CPU target, swung between 0.51 and
 * 1.68 ms from run to run), while a round's items stay under what the outbox takes of a site's
 * unproven items (half of 100,000). Against the emulator (3,000 items/s) fewer: its rounds
 * follow one another without waiting for delivery, and its backlog would fill the outbox.
 */
const REQUESTS: Record<'noop' | 'emulator', Record<(typeof BATCHES)[number], number>> = {
  noop: { 1: 4000, 10: 2000, 100: 300 },
  emulator: { 1: 1200, 10: 500, 100: 100 },
};

type Role = 'relay' | ServerRole;
/** The ladder's servers (--ladder), from the least of the relay's work to the most; the relay on SQLite (`relay`) is the last rung. */
const LADDER = ['read', 'parse', 'forward', 'checks', 'memory'] as const;
type Step = (typeof LADDER)[number];
type Target = 'relay' | 'bare' | Step;
/** Servers whose CPU is read once the platform has every item they took. */
const FORWARDS: readonly Target[] = ['bare', 'relay', 'forward', 'memory'];

/** Platform calls a second the relay in front of the no-op platform may make: its deliverer keeps up with what it accepts. */
const NOOP_PLATFORM_RATE = 1000;

const spawn = (which: Role, upstreamPort = 0, upstream: 'noop' | 'emulator' = 'noop', options: { state?: 'memory'; handoff?: 'none' } = {}) =>
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
            // each request from one of --addresses visitors (X-Forwarded-For from loopback)
            trustProxy: '127.0.0.1',
            ...(upstream === 'noop' ? { platformRate: NOOP_PLATFORM_RATE } : {}),
            ...options,
          }),
        ],
        // e.g. BENCH_RELAY_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof": profile the relay in front of the no-op platform
        { plain: true, nodeArgs: upstream === 'noop' ? (process.env['BENCH_RELAY_NODE_ARGS']?.split(' ').filter(Boolean) ?? []) : [] },
      )
    : spawnRole(new URL(import.meta.url).pathname, [which, String(upstreamPort)]);
const spawnStep = (step: Step, platformPort: number) =>
  step === 'checks' || step === 'memory'
    ? spawn('relay', platformPort, 'noop', step === 'checks' ? { handoff: 'none' } : { state: 'memory' })
    : spawn(step, platformPort);

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
  /**
   * CPU of the server under test per 100 items forwarded; for the relay in front of the no-op
   * platform, from the first request until the platform has every item (accept and deliver)
   */
  cpu_ms_per_100_items: number;
  /** the relay in front of the no-op platform: ms from the last answer until the platform had every item */
  delivered_after_ms?: number;
  /**
   * the server's CPU from the first request to the last answer over that time, in cores (all its
   * threads): well under one for a server whose main thread waits on something other than the CPU
   */
  cores_while_answering: number;
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

function countNotAccepted(target: Target, status: number, text: string, items: number): number {
  if (status !== 200) return items;
  if (target === 'read') return 0;
  try {
    if (target !== 'bare') return (JSON.parse(text) as { results: { status: string }[] }).results.filter((r) => r.status !== 'accepted').length;
    return items - (JSON.parse(text) as { activities: { status: string }[] }).activities.filter((a) => a.status === 'queued').length;
  } catch {
    return items;
  }
}

let visitor = 0;
/** The next of `addresses` visitor addresses, in turn (`X-Forwarded-For`). */
const nextAddress = (addresses: number) => {
  const n = visitor++ % addresses;
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
};

interface Load {
  target: Target;
  server: Child;
  platform: Child;
  items: number;
  total: number;
  concurrency: number;
  addresses: number;
  /** wait until the platform has every item before reading the server's CPU (the relay's deliverer sends after answering) */
  delivered: boolean;
  /** --rate: requests started at this many a second (an open loop), instead of `concurrency` at a time */
  rate?: number | undefined;
}

/** `total` requests, `concurrency` in flight, bodies made ahead so the generator's own work is not timed. */
async function load({ target, server, platform, items, total, concurrency, addresses, delivered, rate }: Load): Promise<Figures> {
  const bodies = Array.from({ length: total }, () => (target === 'bare' ? platformBody(items) : collectBody(items)));
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const one = (body: string) =>
    new Promise<{ status: number; text: string }>((resolve) => {
      const headers = {
        'content-type': target === 'bare' ? 'application/json' : 'text/plain',
        origin: ORIGIN,
        'content-length': Buffer.byteLength(body),
        'x-forwarded-for': nextAddress(addresses),
      };
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
  const send = async (body: string) => {
    const t0 = performance.now();
    const { status, text } = await one(body);
    latencies.push(performance.now() - t0);
    if (status !== 200) errors += 1;
    notAccepted += countNotAccepted(target, status, text, items);
  };
  const cpuBefore = await server.cpu();
  const callsBefore = await platform.calls();
  const itemsBefore = await platform.items();
  const started = performance.now();
  await Promise.all(
    rate === undefined
      ? // a closed loop: each of `concurrency` senders sends its next request as soon as its last is answered
        Array.from({ length: concurrency }, async () => {
          while (next < total) await send(bodies[next++]!);
        })
      : // an open loop, as pages send: request i starts i / rate seconds in, whatever is still unanswered
        bodies.map(async (body, i) => {
          await new Promise((resolve) => setTimeout(resolve, started + (i * 1000) / rate - performance.now()));
          await send(body);
        }),
  );
  const seconds = (performance.now() - started) / 1000;
  const answered = performance.now();
  const cpuAnswered = await server.cpu();
  // Accept and deliver: until the platform has what was accepted (60 s at most).
  const expected = total * items - notAccepted;
  while (delivered && (await platform.items()) - itemsBefore < expected && performance.now() - answered < 60_000)
    await new Promise((resolve) => setTimeout(resolve, 5));
  const deliveredAfter = performance.now() - answered;
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
    cores_while_answering: round2((cpuAnswered - cpuBefore) / 1e6 / seconds),
    rss_mb: Math.round(rss / 1024 / 1024),
    platform_calls_per_100_items: round2(calls / ((total * items) / 100)),
    ...(delivered ? { delivered_after_ms: Math.round(deliveredAfter) } : {}),
  };
}

const median = (rounds: Figures[]): Figures => [...rounds].sort((a, b) => a.rps - b.rps)[Math.floor(rounds.length / 2)]!;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      concurrency: { type: 'string', default: '16' },
      rounds: { type: 'string', default: '3' },
      scale: { type: 'string', default: '1' },
      addresses: { type: 'string', default: '100000' },
      batches: { type: 'string', default: BATCHES.join(',') },
      upstreams: { type: 'string', default: 'noop,emulator' },
      ladder: { type: 'boolean', default: false },
      // Requests sent to each server before the measured rounds, in rounds: a fifth of one by default.
      warmup: { type: 'string', default: '0.2' },
      // Requests a second, started on a clock whether or not earlier ones are answered (as pages
      // send), instead of --concurrency at a time: what an item costs at a real site's pace.
      rate: { type: 'string' },
    },
  });
  const rate = values.rate === undefined ? undefined : Number(values.rate);
  // At a pace the figures are another bench's: they do not replace the saturation's.
  const name = rate === undefined ? 'collect' : 'collect-paced';
  const concurrency = Number(values.concurrency);
  const rounds = Number(values.rounds);
  const scale = Number(values.scale);
  const addresses = Number(values.addresses);
  const warmup = Number(values.warmup);
  const batches = BATCHES.filter((items) => values.batches.split(',').map(Number).includes(items));
  const upstreamNames = (['noop', 'emulator'] as const).filter((name) => values.upstreams.split(',').includes(name));
  if (![concurrency, rounds, scale, addresses, warmup, rate ?? 1].every((n) => Number.isFinite(n) && n > 0))
    throw new RangeError('--concurrency, --rounds, --scale, --addresses, --warmup and --rate must be positive numbers');
  if (batches.length === 0 || upstreamNames.length === 0) throw new RangeError(`--batches is some of ${BATCHES.join(',')}, --upstreams some of noop,emulator`);
  const loadBefore = loadavg()[0]!;
  const children: ChildProcess[] = [];
  const results: Record<string, unknown>[] = [];
  try {
    const pairs: Partial<Record<'noop' | 'emulator', { platform: Child } & Partial<Record<Target, Child>>>> = {};
    for (const upstream of upstreamNames) {
      const platform = await spawn(upstream);
      const pair: { platform: Child } & Partial<Record<Target, Child>> = {
        platform,
        relay: await spawn('relay', platform.port, upstream),
        bare: await spawn('bare', platform.port),
      };
      // The ladder's servers, against the no-op platform only.
      for (const step of values.ladder && upstream === 'noop' ? LADDER : []) pair[step] = await spawnStep(step, platform.port);
      children.push(platform.child, ...Object.values(pair).map((server) => server.child));
      pairs[upstream] = pair;
    }

    for (const items of batches) {
      const row: Record<string, unknown> = { items, requests_per_round: Math.max(10, Math.round(REQUESTS.noop[items] * scale)) };
      for (const upstream of upstreamNames) {
        const total = Math.max(10, Math.round(REQUESTS[upstream][items] * scale));
        if (upstream === 'emulator') row['requests_per_round_emulator'] = total;
        const pair = pairs[upstream]!;
        const steps = LADDER.filter((step) => pair[step] !== undefined);
        const targets: Target[] = ['bare', ...steps, 'relay'];
        const measured = Object.fromEntries(targets.map((target) => [target, [] as Figures[]])) as Record<Target, Figures[]>;
        const run = (target: Target, requests: number) =>
          load({
            target,
            server: pair[target]!,
            platform: pair.platform,
            items,
            total: requests,
            concurrency,
            addresses,
            delivered: upstream === 'noop' && FORWARDS.includes(target),
            rate,
          });
        // Warm-up, a round at most at a time (a round's items stay within the outbox's share of a site).
        for (const target of targets) for (let left = Math.ceil(total * warmup); left > 0; left -= total) await run(target, Math.min(left, total));
        for (let round = 0; round < rounds; round++) {
          for (const target of targets) measured[target].push(await run(target, total));
        }
        const relay = median(measured.relay);
        const bare = median(measured.bare);
        if (steps.length > 0)
          row['ladder'] = Object.fromEntries(
            steps.map((step) => {
              const figures = median(measured[step]);
              return [step, { ...figures, ratio: round2(figures.rps / bare.rps), cpu_ratio: round2(figures.cpu_ms_per_100_items / bare.cpu_ms_per_100_items) }];
            }),
          );
        row[`relay_${upstream}`] = relay;
        row[`bare_${upstream}`] = bare;
        row[upstream === 'noop' ? 'ratio' : 'ratio_emulator'] = round2(relay.rps / bare.rps);
        if (upstream === 'noop') {
          row['p99_ratio'] = round2(relay.p99_ms / bare.p99_ms);
          row['cpu_ratio'] = round2(relay.cpu_ms_per_100_items / bare.cpu_ms_per_100_items);
          row['rss_mb'] = Math.max(...measured.relay.map((figures) => figures.rss_mb));
        }
      }
      results.push(row);
    }
  } finally {
    // Disconnected, a role exits on its own (a relay under --cpu-prof writes its profile then); killed after 10 s.
    await Promise.all(
      children.map(async (child) => {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        if (child.connected) child.disconnect();
        const timer = setTimeout(() => child.kill(), 10_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  const report = {
    benchmark: name,
    date: new Date().toISOString(),
    node: process.version,
    cpus: availableParallelism(),
    ...(rate === undefined
      ? {
          concurrency,
          target_rss_mb: 150,
          // At /collect saturation in batches of 10 against the no-op platform, beside the bare pass-through in the same run.
          target_cpu_ratio_batch_10: 2.2,
          target_ratio_batch_10: 0.6,
        }
      : // The saturation targets are not judged at a pace: what it shows is what an item costs there, beside the bare's.
        { requests_per_second: rate }),
    rounds,
    warmup_rounds: warmup,
    addresses,
    load_average_1m: { before: round2(loadBefore), after: round2(loadavg()[0]!) },
    store: process.env['BENCH_REDIS_URL'] ? 'Redis' : 'SQLite file (the CLI default)',
    item_ids: process.env['BENCH_ID_KIND'] === 'v4' ? 'random v4 UUIDs' : 'v7 UUIDs, as the snippet makes them',
    what: `relay = startRelay from the built dist/ on plain Node (Node entry, its default node:http transport, joined platform calls, the CLI default SQLite state, one log line a request as by default, to /dev/null) handling POST /collect of track items from ${addresses} visitor addresses (X-Forwarded-For, RELAY_TRUST_PROXY=127.0.0.1); bare = node:http pass-through adding X-Api-Key to the same events already shaped for activities/create. ratio = relay rps / bare rps against the no-op platform (medians of alternating rounds); ratio_emulator the same against the emulator. CPU against the no-op platform runs from the first request until the platform has every accepted item (RELAY_PLATFORM_RATE=${NOOP_PLATFORM_RATE}: accept and deliver); cpu_ratio = relay CPU / bare CPU per 100 items.${
      rate === undefined
        ? ` Each server gets ${concurrency} requests at a time (a closed loop: as fast as it answers).`
        : ` Each server gets ${rate} requests a second, started on a clock whether or not earlier ones are answered (an open loop, as pages send): its requests/s is the offered pace, and what differs is the CPU an item costs at that pace.`
    }`,
    ...(values.ladder
      ? {
          ladder_what:
            "ladder (each batch size, no-op platform, the same rounds as relay and bare, medians): read = node:http reading the body and answering a fixed small JSON; parse = + JSON.parse and one result per item in the relay's answer shape; forward = parse, then each track made its platform entry and sent in calls of 100 through the relay's undici transport (dist/), the answer parsed; checks = the built relay (startRelay, as relay) handing accepted items to a queue that keeps nothing (enqueue): every check, identity, limit, answer and log line, no outbox, no deliverer; memory = the built relay on its memory store (accept and deliver); ratio and cpu_ratio against bare.",
        }
      : {}),
    results,
  };
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL(`./results/${name}.json`, import.meta.url), `${JSON.stringify(report, null, 2)}\n`);

  // --upstreams may leave one out: its figures read as blank.
  const f = (x: unknown) => (x ?? {}) as Partial<Figures>;
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
      'CPU ratio': row['cpu_ratio'],
      'relay RSS MB': row['rss_mb'],
      'relay cores': f(row['relay_noop']).cores_while_answering,
      'platform calls/100 items relay': f(row['relay_noop']).platform_calls_per_100_items,
      bare: f(row['bare_noop']).platform_calls_per_100_items,
      'not accepted': (f(row['relay_noop']).items_not_accepted ?? 0) + (f(row['relay_emulator']).items_not_accepted ?? 0),
    })),
  );
  for (const ladder of results.filter((row) => row['ladder'] !== undefined)) {
    const rungs = {
      bare: ladder['bare_noop'],
      ...(ladder['ladder'] as object),
      relay: { ...f(ladder['relay_noop']), ratio: ladder['ratio'], cpu_ratio: ladder['cpu_ratio'] },
    };
    console.log(`the ladder at batches of ${ladder['items']} against the no-op platform (ratios to the bare pass-through):`);
    console.table(
      Object.entries(rungs).map(([server, x]) => {
        const figures = x as Figures & { ratio?: number; cpu_ratio?: number };
        return {
          server,
          rps: figures.rps,
          'rps ratio': figures.ratio,
          'p99 ms': figures.p99_ms,
          'CPU ms/100 items': figures.cpu_ms_per_100_items,
          'CPU ratio': figures.cpu_ratio,
          cores: figures.cores_while_answering,
          'platform calls/100 items': figures.platform_calls_per_100_items,
        };
      }),
    );
  }
  console.log(`wrote bench/results/${name}.json (load average ${round2(loadBefore)} → ${round2(loadavg()[0]!)})`);
  const failed = results.some(
    (row) =>
      ['relay_noop', 'relay_emulator', 'bare_noop', 'bare_emulator'].some((name) => (f(row[name]).errors ?? 0) > 0) ||
      Object.values((row['ladder'] ?? {}) as Record<string, Figures>).some((figures) => figures.errors > 0),
  );
  if (failed) {
    console.error('! some requests failed; see errors in bench/results/collect.json');
    process.exitCode = 1;
  }
}

// Last, so every declaration above exists before a role or the load generator runs.
const role = process.argv[2];
if (isServerRole(role)) await serveServer(role, Number(process.argv[3] ?? 0));
else await main();
