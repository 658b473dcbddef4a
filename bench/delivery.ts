/**
 * Benchmark: the relay's delivery to a platform that limits each key to 10 calls a second, as a
 * new user runs both (`cdp-edge emulator --rate-limit 10 --latency-ms 50` and `cdp-edge relay`
 * from the built dist/, default configuration plus the site), fed by hundreds of simulated
 * browsers that send what the snippet sends (bench/lib/browsers.ts) at a fixed offered rate.
 *
 *   npm run build && npx tsx bench/delivery.ts [--only 300,1500,slow-platform,cpu,business] [--seconds 20] [--browsers 500] [--drain-seconds 45]
 *
 * Phases, each with a fresh emulator and relay:
 *  - 300            300 items/s for --seconds, batches of 1–3, platform 50 ms per call;
 *  - 1500           1,500 items/s (above the key's 1,000 items/s ceiling), same otherwise;
 *  - slow-platform  300 items/s for half of --seconds with a platform taking 500 ms per call;
 *  - cpu            1,000 items/s (the key's ceiling) in batches of 10 for 15 s: the relay's CPU
 *                   per item where it matters, when the relay is busy (every phase reports its own);
 *  - business       4,000 items/s in batches of 10 to a business key (30 calls/s: the emulator's
 *                   --rate-limit 30 and RELAY_PLATFORM_RATE=30), whose ceiling is 3,000 items/s.
 * Each offer is followed by a drain: until every browser holds nothing and the platform has every
 * accepted item, or --drain-seconds. Counted at the platform (its state and GET /_emulator/calls):
 * items delivered per second against offered, delivered in real time (applied before the offer
 * ended), entries per call, calls answered 429, created → applied p50/p99, /collect answer
 * p50/p99, lost (accepted, never applied) and duplicated (applied more than once), and the relay
 * process's CPU (user + system from /proc) per 100 items. Writes bench/results/delivery.json.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { identityHash } from '../src/relay/index.js';
import { type Browsers, createBrowsers } from './lib/browsers.js';
import { type CliProcess, startCli } from './lib/cli.js';
import {
  ACTIVITIES,
  arrivals as platformArrivals,
  callCounts as platformCalls,
  callFigures,
  defineActivities,
  ITEMS_PER_VISITOR,
  ORIGIN,
  PLATFORM_KEY,
  PLATFORM_RATE,
  SECRET,
  SITE_KEY,
} from './lib/platform.js';

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    seconds: { type: 'string', default: '20' },
    browsers: { type: 'string', default: '500' },
    'drain-seconds': { type: 'string', default: '45' },
  },
});
const SECONDS = Number(values.seconds);
const BROWSERS = Number(values.browsers);
const DRAIN_SECONDS = Number(values['drain-seconds']);
if (![SECONDS, BROWSERS, DRAIN_SECONDS].every((n) => Number.isFinite(n) && n > 0))
  throw new RangeError('--seconds, --browsers and --drain-seconds must be positive numbers');

interface Phase {
  name: string;
  rate: number;
  seconds: number;
  batch: readonly [number, number];
  latencyMs: number;
  /** the key's platform calls per second (`--rate-limit` and `RELAY_PLATFORM_RATE`) @default 10 */
  platformRate?: number;
}
const PHASES: Phase[] = [
  { name: '300', rate: 300, seconds: SECONDS, batch: [1, 3], latencyMs: 50 },
  { name: '1500', rate: 1500, seconds: SECONDS, batch: [1, 3], latencyMs: 50 },
  { name: 'slow-platform', rate: 300, seconds: Math.ceil(SECONDS / 2), batch: [1, 3], latencyMs: 500 },
  { name: 'cpu', rate: 1000, seconds: 15, batch: [10, 10], latencyMs: 50 },
  { name: 'business', rate: 4000, seconds: SECONDS, batch: [10, 10], latencyMs: 50, platformRate: 30 },
];
const only = values.only?.split(',');
const phases = PHASES.filter((p) => !only || only.includes(p.name));

const round = (n: number, digits = 2) => (Number.isFinite(n) ? Math.round(n * 10 ** digits) / 10 ** digits : null);
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;

const callCounts = (url: string) => platformCalls(url, PLATFORM_KEY);
const arrivals = (url: string) => platformArrivals(url, PLATFORM_KEY);

async function runPhase(phase: Phase) {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-delivery-'));
  const started: CliProcess[] = [];
  let browsers: Browsers | undefined;
  try {
    const emulator = await startCli([
      'emulator',
      '--port',
      '0',
      '--key',
      PLATFORM_KEY,
      '--rate-limit',
      String(phase.platformRate ?? PLATFORM_RATE),
      '--latency-ms',
      String(phase.latencyMs),
    ]);
    started.push(emulator);
    await defineActivities(emulator.url);
    const relay = await startCli(
      ['relay', '--port', '0', '--state-file', join(dir, 'relay-state.db')],
      {
        CDP_API_KEY: PLATFORM_KEY,
        CDP_BASE_URL: emulator.url,
        RELAY_SITES: JSON.stringify([{ key: SITE_KEY, origins: [ORIGIN], verify: 'required' }]),
        RELAY_IDENTITY_SECRET: SECRET,
        RELAY_TRUST_PROXY: '127.0.0.1',
        RELAY_PLATFORM_RATE: String(phase.platformRate ?? PLATFORM_RATE),
      },
      30_000,
      // e.g. BENCH_RELAY_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof": profile the relay alone
      process.env['BENCH_RELAY_NODE_ARGS']?.split(' ').filter(Boolean) ?? [],
    );
    started.push(relay);
    browsers = createBrowsers({
      relayUrl: relay.url,
      siteKey: SITE_KEY,
      origin: ORIGIN,
      browsers: BROWSERS,
      itemsPerVisitor: ITEMS_PER_VISITOR,
      activities: ACTIVITIES,
      userHash: (email) => identityHash(SECRET, 'str::email', email),
    });
    const b = browsers;
    const callsBefore = await callCounts(emulator.url);
    const cpuBefore = relay.cpuMs();
    const offerStart = Date.now();
    const progress = async (label: string) => {
      const now = callFigures(callsBefore, await callCounts(emulator.url));
      console.log(
        `[${phase.name}] ${label}: made ${b.made.size}, held by browsers ${b.held()}, /collect answers ${b.calls.length}, at the platform ${now.entries} in ${now.applied} calls (429: ${now.limited})`,
      );
    };
    await b.offer(phase.rate, phase.seconds, phase.batch, (s) => void progress(`${s} s`));
    const offerEnd = Date.now();
    const offerEndTick = performance.now();
    const offered = b.made.size;
    const accepted = () => [...b.made.values()].filter((m) => m.status === 'accepted' || m.status === 'duplicate').length;
    const drained = await b.drain(
      offerEnd + DRAIN_SECONDS * 1000,
      async () => callFigures(callsBefore, await callCounts(emulator.url)).entries >= accepted(),
      () => void progress(`drain ${Math.round((Date.now() - offerEnd) / 1000)} s`),
    );
    const drainEnd = Date.now();
    const cpuMs = relay.cpuMs() - cpuBefore;
    const calls = callFigures(callsBefore, await callCounts(emulator.url));
    const seen = await arrivals(emulator.url);

    const latencies: number[] = [];
    let inRealTime = 0;
    let duplicated = 0;
    let lost = 0;
    let heldAtEnd = 0;
    for (const [id, item] of b.made) {
      const times = seen.get(id);
      if (times) {
        const first = Math.min(...times);
        latencies.push(first - item.at);
        if (first <= offerEnd) inRealTime++;
        duplicated += times.length - 1;
      } else if (item.status === 'accepted' || item.status === 'duplicate') lost++;
      else if (item.status === undefined) heldAtEnd++;
    }
    latencies.sort((x, y) => x - y);
    const offerSeconds = (offerEnd - offerStart) / 1000;
    // the answers to what was sent while the offer ran (not the drain's retries)
    const answers = b.calls.filter((c) => c.status !== 0 && c.sentAt <= offerEndTick).map((c) => c.ms);
    answers.sort((x, y) => x - y);
    const statuses: Record<string, number> = {};
    for (const c of b.calls) statuses[c.status] = (statuses[c.status] ?? 0) + 1;
    const delivered = [...b.made.keys()].filter((id) => seen.has(id)).length;
    const identifies = [...b.made].filter(([, m]) => m.type === 'identify');
    return {
      offered_items_per_second: phase.rate,
      batch: phase.batch,
      platform_ms_per_call: phase.latencyMs,
      key_calls_per_second: phase.platformRate ?? PLATFORM_RATE,
      offer_seconds: round(offerSeconds, 1),
      items: offered,
      identifies: identifies.length,
      identifies_delivered: identifies.filter(([id]) => seen.has(id)).length,
      visitors: b.visitors(),
      delivered_in_real_time: inRealTime,
      delivered_in_real_time_share: round(inRealTime / offered, 3),
      delivered_per_second_in_real_time: Math.round(inRealTime / offerSeconds),
      delivered_after_drain: delivered,
      drained,
      drain_seconds: round((drainEnd - offerEnd) / 1000, 1),
      lost,
      duplicated,
      rejected: b.rejected(),
      held_by_browsers_at_end: heldAtEnd,
      browsers_holding_at_end: b.holding().slice(0, 10),
      collect_failures: b.errors(),
      platform_calls: calls.calls,
      platform_calls_per_second: round(calls.calls / ((drainEnd - offerStart) / 1000), 1),
      platform_429: calls.limited,
      platform_429_share: round(calls.limited / Math.max(1, calls.calls), 4),
      entries_per_call: round(calls.entries / Math.max(1, calls.applied), 1),
      created_to_platform_ms: { p50: round(percentile(latencies, 50), 0), p99: round(percentile(latencies, 99), 0) },
      collect_ms: { p50: round(percentile(answers, 50)), p99: round(percentile(answers, 99)), requests: answers.length },
      collect_statuses: statuses,
      relay_cpu_ms_per_100_items: round(cpuMs / (offered / 100)),
    };
  } finally {
    browsers?.close();
    for (const child of started.reverse()) await child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const loadBefore = loadavg();
type PhaseResult = Awaited<ReturnType<typeof runPhase>>;
const RESULTS = new URL('./results/delivery.json', import.meta.url);
// With --only, the phases not run keep their last figures (each records the commit it ran on).
const results: Record<string, PhaseResult & { commit?: string }> =
  only && existsSync(RESULTS) ? (JSON.parse(readFileSync(RESULTS, 'utf8')) as { phases: Record<string, PhaseResult> }).phases : {};
for (const phase of phases) {
  console.log(
    `━━ ${phase.name}: ${phase.rate} items/s for ${phase.seconds} s, batches of ${phase.batch.join('–')}, platform ${phase.latencyMs} ms per call ━━`,
  );
  results[phase.name] = { ...(await runPhase(phase)), commit: headCommit() };
  console.log(JSON.stringify(results[phase.name]));
}

function headCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}
const commit = headCommit();
const report = {
  benchmark: 'delivery',
  date: new Date().toISOString(),
  commit,
  node: process.version,
  cpus: availableParallelism(),
  load_average: { before: loadBefore.map((n) => round(n)), after: loadavg().map((n) => round(n)) },
  machine: 'a 2-core machine shared with other work while it ran (see load_average): read rates and latencies as a busy machine gives them',
  setup: `cdp-edge emulator --rate-limit ${PLATFORM_RATE} --latency-ms <per phase>; cdp-edge relay (built dist/, default configuration: SQLite state file, RELAY_LOG info) with one site (verify required, RELAY_IDENTITY_SECRET) and RELAY_TRUST_PROXY=127.0.0.1; ${BROWSERS} browsers at once, each visitor with its own address and queue id, ${ITEMS_PER_VISITOR} items per visitor (an identify with user_hash, then tracks naming the person), v7 ids; open loop; drain up to ${DRAIN_SECONDS} s`,
  targets: {
    real_time_share_at_300: 0.95,
    platform_429_share_at_300: 0.01,
    p50_ms_at_300: 2000,
    p99_ms_at_300: 5000,
    delivered_per_second_at_1500: 900,
    platform_429_calls_at_1500: 0,
    delivered_per_second_at_business: 2700,
    entries_per_call_at_1500: 90,
    collect_p50_ms_slow_platform: 20,
    relay_cpu_ms_per_100_items_batch_10: 3,
  },
  phases: results,
};
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(RESULTS, `${JSON.stringify(report, null, 2)}\n`);
console.table(
  Object.entries(results).map(([name, r]) => ({
    phase: name,
    offered: `${r.offered_items_per_second}/s`,
    'real time/s': r.delivered_per_second_in_real_time,
    'real time %': round((r.delivered_in_real_time_share ?? 0) * 100, 1),
    'entries/call': r.entries_per_call,
    '429 %': round((r.platform_429_share ?? 0) * 100, 2),
    'p50 ms': r.created_to_platform_ms.p50,
    'p99 ms': r.created_to_platform_ms.p99,
    '/collect p50 ms': r.collect_ms.p50,
    '/collect p99 ms': r.collect_ms.p99,
    lost: r.lost,
    dup: r.duplicated,
    drained: r.drained,
    'CPU ms/100': r.relay_cpu_ms_per_100_items,
  })),
);
console.log('wrote bench/results/delivery.json');
