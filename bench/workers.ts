/**
 * Benchmark: the relay on Cloudflare Workers, run as users run it. The shipped wrangler.toml
 * (no queue, 16 outbox objects, the Rate Limiting binding), with `main` pointed at a user's Worker
 * file that exports the built dist/relay/cloudflare.js (bench/lib/bench-worker.js, which adds a
 * route reading the objects' call counters), served by the project's wrangler (`wrangler dev`:
 * workerd with real SQLite Durable Objects and alarms) against `cdp-edge emulator --rate-limit 10
 * --latency-ms 50` over real HTTP, fed by the simulated browsers of the delivery bench
 * (bench/lib/browsers.ts: identifies with user_hash, tracks naming their person, v7 ids, batches of
 * 1–3, open loop), each visitor with its own CF-Connecting-IP.
 *
 *   npm run build && npx tsx bench/workers.ts [--only 30,100,300] [--seconds 20] [--drain-seconds 120]
 *
 * Each phase (offered items/s) starts a fresh emulator and a fresh `wrangler dev` (empty
 * Durable Object storage), offers for --seconds, then drains until the platform has every
 * accepted item. Measured: entries per platform call (the emulator's call log), Durable Object
 * requests (RPC calls into each object and outbox alarms, from the objects' own counters) per
 * /collect and the busiest object's share of them, workerd's CPU (user + system of the workerd
 * processes from /proc, offer and drain) per 100 items offered, delivered in real time, lost and
 * duplicated. Writes bench/results/workers.json.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createToken } from '../src/relay/core/tokens.js';
import { freePort } from '../test/support/redis.js';
import { createBrowsers } from './lib/browsers.js';
import { processCpuMs, startCli } from './lib/cli.js';
import {
  benchSite,
  arrivals,
  callCounts,
  callFigures,
  defineActivities,
  ITEMS_PER_VISITOR,
  ORIGIN,
  percentile,
  PLATFORM_KEY,
  PLATFORM_RATE,
  round,
  SECRET,
  SITE_KEY,
} from './lib/platform-counts.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const WRANGLER = join(root, 'node_modules', 'wrangler', 'bin', 'wrangler.js');
const ENTRY = join(root, 'bench', 'lib', 'bench-worker.js');
const { values } = parseArgs({
  options: { only: { type: 'string' }, seconds: { type: 'string', default: '20' }, 'drain-seconds': { type: 'string', default: '120' } },
});
const SECONDS = Number(values.seconds);
const DRAIN_SECONDS = Number(values['drain-seconds']);
if (![SECONDS, DRAIN_SECONDS].every((n) => Number.isFinite(n) && n > 0)) throw new RangeError('--seconds and --drain-seconds must be positive numbers');

/** Offered items/s and the browsers at once (a visitor sends 14 items over its visit). */
const PHASES = [
  { name: '30', rate: 30, browsers: 60 },
  { name: '100', rate: 100, browsers: 200 },
  { name: '300', rate: 300, browsers: 500 },
];
const only = values.only?.split(',');
const phases = PHASES.filter((p) => !only || only.includes(p.name));

/** The processes below `pid` (children, grandchildren, …) named `name`. */
function descendants(pid: number, name: string): number[] {
  const parent = new Map<number, number>();
  const names = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      names.set(Number(entry), stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')));
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // the process ended meanwhile
    }
  }
  const below = (p: number): boolean => p === pid || (parent.has(p) && p > 1 && below(parent.get(p)!));
  return [...names].filter(([p, n]) => n === name && below(parent.get(p) ?? 0)).map(([p]) => p);
}

/** `wrangler dev` on the shipped template with `main` pointed at the bench Worker; resolves once it is ready. */
async function startWorker(dir: string, vars: Record<string, string>): Promise<{ url: string; child: ChildProcess; stop: () => Promise<void> }> {
  const template = readFileSync(join(root, 'wrangler.toml'), 'utf8');
  if (!/^main = .*$/m.test(template)) throw new Error('wrangler.toml has no main line');
  writeFileSync(join(dir, 'wrangler.toml'), template.replace(/^main = .*$/m, `main = ${JSON.stringify(ENTRY)}`));
  const [port, inspector] = [await freePort(), await freePort()];
  const args = [WRANGLER, 'dev', '--config', join(dir, 'wrangler.toml'), '--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(inspector)];
  for (const [name, value] of Object.entries(vars)) args.push('--var', `${name}:${value}`);
  const child = spawn(process.execPath, args, {
    cwd: dir,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', WRANGLER_SEND_ERROR_REPORTS: 'false', NO_UPDATE_NOTIFIER: '1', CI: '1' },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    process.kill(-child.pid!, 'SIGTERM');
    const killer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 5000);
    await exited;
    clearTimeout(killer);
  };
  let head = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`wrangler dev was not ready within 120 s:\n${head}`)), 120_000);
    const read = (chunk: Buffer) => {
      // Only the start is kept: after that the output is read and dropped, so a full pipe never blocks workerd.
      if (head.length < 20_000) head += chunk.toString();
      const ready = /Ready on (http:\/\/\S+)/.exec(head);
      if (ready) {
        clearTimeout(timer);
        resolve(ready[1]!);
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    void exited.then(() => reject(new Error(`wrangler dev exited before it was ready:\n${head}`)));
  });
  return { url, child, stop };
}

interface Usage {
  kind: string;
  name: string;
  calls: number;
  alarms: number;
}

/**
 * The objects' counters, read every few seconds and added up: an object's counters start again at
 * 0 when workerd evicts it, so what it served since the last read before that is not seen (the
 * figures are a floor).
 */
function usageTotals(url: string) {
  const total = new Map<string, Usage>();
  const last = new Map<string, Usage>();
  let readAt = 0;
  let failed = 0;
  /** Reads the counters (at most every 5 s unless `now`). */
  const read = async (now = false) => {
    if (!now && Date.now() - readAt < 5000) return;
    readAt = Date.now();
    let read: Usage[];
    try {
      const answer = await fetch(`${url}/__bench/usage`);
      if (!answer.ok) throw new Error(`/__bench/usage answered ${answer.status}: ${(await answer.text()).slice(0, 500)}`);
      read = (await answer.json()) as Usage[];
    } catch (error) {
      // an overloaded workerd may not answer: the next read catches up (an eviction meanwhile is not seen)
      failed++;
      console.log(`usage read failed: ${String(error)}`);
      return;
    }
    for (const now of read) {
      const was = last.get(now.name);
      const restarted = was !== undefined && (now.calls < was.calls || now.alarms < was.alarms);
      const base = was === undefined || restarted ? { calls: 0, alarms: 0 } : was;
      const sum = total.get(now.name) ?? { ...now, calls: 0, alarms: 0 };
      sum.calls += now.calls - base.calls;
      sum.alarms += now.alarms - base.alarms;
      total.set(now.name, sum);
      last.set(now.name, now);
    }
  };
  return { read, totals: () => [...total.values()], failed: () => failed };
}

async function runPhase(phase: (typeof PHASES)[number]) {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-workers-'));
  const stops: (() => Promise<void>)[] = [];
  let browsers: ReturnType<typeof createBrowsers> | undefined;
  try {
    const emulator = await startCli(['emulator', '--port', '0', '--key', PLATFORM_KEY, '--rate-limit', String(PLATFORM_RATE), '--latency-ms', '50']);
    stops.push(emulator.stop);
    await defineActivities(emulator.url);
    // An admin token reads the outbox after the drain (what stayed there, and why), as `cdp-edge outbox --relay` does.
    const admin = await createToken({ name: 'bench', scopes: ['admin'] });
    const worker = await startWorker(dir, {
      RELAY_TOKENS: JSON.stringify([admin.entry]),
      CDP_API_KEY: PLATFORM_KEY,
      CDP_BASE_URL: emulator.url,
      RELAY_SITES: JSON.stringify([{ key: SITE_KEY, origins: [ORIGIN], verify: 'required' }]),
      RELAY_IDENTITY_SECRET: SECRET,
      // e.g. BENCH_RELAY_LOG=off: the relay's log lines (info by default, one per request) cost workerd CPU here
      ...(process.env['BENCH_RELAY_LOG'] ? { RELAY_LOG: process.env['BENCH_RELAY_LOG'] } : {}),
    });
    stops.push(worker.stop);
    // workerd loads the Worker on its first request
    if ((await fetch(`${worker.url}/healthz`)).status !== 200) throw new Error('the Worker did not answer /healthz');
    // wrangler dev runs more than one workerd (its proxy, the Worker) and may start one again: every
    // workerd seen under it is counted, each at its last reading.
    const cpuSeen = new Map<number, number>();
    const cpu = () => {
      for (const pid of descendants(worker.child.pid!, 'workerd')) {
        try {
          cpuSeen.set(pid, processCpuMs(pid));
        } catch {
          // it ended meanwhile: its last reading stands
        }
      }
      return [...cpuSeen.values()].reduce((sum, ms) => sum + ms, 0);
    };
    if (cpu() === 0 && cpuSeen.size === 0) throw new Error('could not find the workerd process under wrangler dev');

    browsers = createBrowsers({
      ...benchSite(worker.url),
      browsers: phase.browsers,
      itemsPerVisitor: ITEMS_PER_VISITOR,
      addressHeader: 'cf-connecting-ip',
    });
    const b = browsers;
    const adminGet = async <T>(path: string) =>
      (await (await fetch(`${worker.url}/admin/outbox/${path}`, { headers: { authorization: `Bearer ${admin.token}` } })).json()) as T;
    const usage = usageTotals(worker.url);
    await usage.read(true);
    const callsBefore = await callCounts(emulator.url, PLATFORM_KEY);
    const cpuBefore = cpu();
    const offerStart = Date.now();
    const progress = async (label: string) => {
      const now = callFigures(callsBefore, await callCounts(emulator.url, PLATFORM_KEY));
      await usage.read();
      console.log(
        `[${phase.name}] ${label}: made ${b.made.size}, held by browsers ${b.held()}, at the platform ${now.entries} in ${now.applied} calls (429: ${now.limited})`,
      );
    };
    await b.offer(phase.rate, SECONDS, [1, 3], (s) => void progress(`${s} s`));
    const offerEnd = Date.now();
    const offerEndTick = performance.now();
    const accepted = () => [...b.made.values()].filter((m) => m.status === 'accepted' || m.status === 'duplicate').length;
    const drained = await b.drain(
      offerEnd + DRAIN_SECONDS * 1000,
      // drained: the browsers hold nothing, the platform has at least as many entries as were accepted, and the outbox objects hold nothing to send
      async () =>
        callFigures(callsBefore, await callCounts(emulator.url, PLATFORM_KEY)).entries >= accepted() &&
        (await adminGet<{ pending: number }>('stats').catch(() => ({ pending: -1 }))).pending === 0,
      () => void progress(`drain ${Math.round((Date.now() - offerEnd) / 1000)} s`),
    );
    const drainEnd = Date.now();
    const cpuMs = cpu() - cpuBefore;
    const calls = callFigures(callsBefore, await callCounts(emulator.url, PLATFORM_KEY));
    const seen = await arrivals(emulator.url, PLATFORM_KEY);
    await usage.read(true);
    const objects = usage.totals();
    const outboxAfter = await adminGet<{ pending: number; dead: number }>('stats');
    const deadReasons: Record<string, number> = {};
    for (const letter of (await adminGet<{ dead_letters: { reason: string }[] }>('dead-letters')).dead_letters)
      deadReasons[letter.reason.slice(0, 80)] = (deadReasons[letter.reason.slice(0, 80)] ?? 0) + 1;

    let inRealTime = 0;
    let duplicated = 0;
    let undelivered = 0;
    const latencies: number[] = [];
    for (const [id, item] of b.made) {
      const times = seen.get(id);
      if (times) {
        const first = Math.min(...times);
        latencies.push(first - item.at);
        if (first <= offerEnd) inRealTime++;
        duplicated += times.length - 1;
      } else if (item.status === 'accepted' || item.status === 'duplicate') undelivered++;
    }
    latencies.sort((x, y) => x - y);
    const answers = b.calls.filter((c) => c.status !== 0 && c.sentAt <= offerEndTick).map((c) => c.ms);
    answers.sort((x, y) => x - y);
    const requests = b.calls.filter((c) => c.status === 200).length;
    const requestsOf = (u: Usage) => u.calls + u.alarms;
    const total = objects.reduce((sum, u) => sum + requestsOf(u), 0);
    const busiest = objects.reduce((top, u) => (requestsOf(u) > requestsOf(top) ? u : top), objects[0]!);
    const byKind: Record<string, { objects: number; requests: number; busiest: number }> = {};
    for (const u of objects) {
      const row = byKind[u.kind] ?? { objects: 0, requests: 0, busiest: 0 };
      byKind[u.kind] = row;
      if (requestsOf(u) > 0) row.objects++;
      row.requests += requestsOf(u);
      row.busiest = Math.max(row.busiest, requestsOf(u));
    }
    const offerSeconds = (offerEnd - offerStart) / 1000;
    return {
      offered_items_per_second: phase.rate,
      browsers: phase.browsers,
      offer_seconds: round(offerSeconds, 1),
      items: b.made.size,
      collect_requests: requests,
      items_per_request: round(b.made.size / Math.max(1, requests), 2),
      delivered_in_real_time_share: round(inRealTime / b.made.size, 3),
      delivered_per_second_in_real_time: Math.round(inRealTime / offerSeconds),
      drained,
      drain_seconds: round((drainEnd - offerEnd) / 1000, 1),
      // accepted and not applied when the drain ended: lost when drained, still in the outbox otherwise
      not_delivered_after_drain: undelivered,
      // the outbox objects once the drain ended: entries still to send, and dead letters by reason (held ambiguous ones among them)
      outbox_after_drain: { pending: outboxAfter.pending, dead: outboxAfter.dead, dead_reasons: deadReasons },
      duplicated,
      rejected: b.rejected(),
      collect_failures: b.errors(),
      created_to_platform_ms: { p50: round(percentile(latencies, 50), 0), p99: round(percentile(latencies, 99), 0) },
      collect_ms: { p50: round(percentile(answers, 50)), p99: round(percentile(answers, 99)) },
      platform_calls: calls.calls,
      platform_429: calls.limited,
      entries_per_call: round(calls.entries / Math.max(1, calls.applied), 1),
      durable_object_requests: total,
      durable_object_requests_per_collect: round(total / Math.max(1, requests), 2),
      busiest_object: { name: busiest.name.startsWith('pacer:') ? 'pacer' : busiest.name, kind: busiest.kind, requests: requestsOf(busiest) },
      busiest_object_share: round(requestsOf(busiest) / Math.max(1, total), 3),
      busiest_outbox_or_router_share: round(
        Math.max(...objects.filter((u) => u.kind === 'outbox' || u.kind === 'router').map(requestsOf)) / Math.max(1, total),
        3,
      ),
      durable_object_requests_by_kind: byKind,
      outbox_alarms: objects.filter((u) => u.kind === 'outbox').reduce((sum, u) => sum + u.alarms, 0),
      workerd_cpu_ms_per_100_items: round(cpuMs / (b.made.size / 100)),
      // the workerd processes seen under wrangler dev (their CPU is the figure above)
      workerd_processes: cpuSeen.size,
      usage_reads_failed: usage.failed(),
    };
  } finally {
    browsers?.close();
    for (const stop of stops.reverse()) await stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const loadBefore = loadavg();
const resultsFile = join(root, 'bench', 'results', 'workers.json');
let previous: { phases?: Record<string, unknown> } = {};
try {
  previous = JSON.parse(readFileSync(resultsFile, 'utf8'));
} catch {
  // no earlier results
}
const results: Record<string, Awaited<ReturnType<typeof runPhase>>> = {};
for (const phase of phases) {
  console.log(`[${phase.name}] ${phase.rate} items/s for ${SECONDS} s from ${phase.browsers} browsers`);
  results[phase.name] = await runPhase(phase);
  console.log(`[${phase.name}]`, JSON.stringify(results[phase.name]));
}
const wrangler = JSON.parse(readFileSync(join(root, 'node_modules', 'wrangler', 'package.json'), 'utf8')) as { version: string };
mkdirSync(join(root, 'bench', 'results'), { recursive: true });
writeFileSync(
  resultsFile,
  `${JSON.stringify(
    {
      benchmark: 'workers',
      date: new Date().toISOString(),
      node: process.version,
      cpus: availableParallelism(),
      load_average: { before: loadBefore.map((n) => round(n)), after: loadavg().map((n) => round(n)) },
      machine: 'a 2-core machine shared with other work while it ran (see load_average): read rates and latencies as a busy machine gives them',
      setup: `wrangler ${wrangler.version} dev (workerd, local SQLite Durable Objects) on the shipped wrangler.toml (no queue, RELAY_SHARDS unset: 16, Rate Limiting binding) with main = bench/lib/bench-worker.js (the built dist/relay/cloudflare.js as a user exports it, plus a bench-only route reading the objects' counters); cdp-edge emulator --rate-limit 10 --latency-ms 50; one site (verify required, RELAY_IDENTITY_SECRET); browsers of bench/lib/browsers.ts (identify with user_hash then 13 tracks naming the person, v7 ids, batches of 1–3, one request in flight, open loop), each visitor its own CF-Connecting-IP; workerd CPU includes wrangler's local proxy Worker and Miniflare's entry Worker in front of the relay`,
      // 300 items/s on a key of 10 calls/s needs 30 entries a call; the shards test's bound for one object's share
      targets: { entries_per_call_at_300: 30, busiest_object_share: 0.125 },
      // --only keeps the other phases' figures
      phases: { ...(previous.phases ?? {}), ...results },
    },
    null,
    2,
  )}\n`,
);
console.table(
  Object.entries(results).map(([name, r]) => ({
    phase: name,
    'entries/call': r.entries_per_call,
    'DO req/collect': r.durable_object_requests_per_collect,
    'busiest %': round((r.busiest_object_share ?? 0) * 100, 1),
    busiest: r.busiest_object.name,
    'CPU ms/100': r.workerd_cpu_ms_per_100_items,
    'real time %': round((r.delivered_in_real_time_share ?? 0) * 100, 1),
    'not delivered': r.not_delivered_after_drain,
    dup: r.duplicated,
  })),
);
console.log('wrote bench/results/workers.json');
