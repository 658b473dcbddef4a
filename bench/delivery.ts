/**
 * Benchmark: the relay's delivery to a platform that limits each key to 10 calls a second, as a
 * new user runs both (`cdp-edge emulator --rate-limit 10 --latency-ms 50` and `cdp-edge relay`
 * from the built dist/, default configuration plus the site), fed by hundreds of simulated
 * browsers that send what the snippet sends (bench/lib/browsers.ts) at a fixed offered rate.
 *
 *   npm run build && npx tsx bench/delivery.ts [--only 300,1500,slow-platform,cpu,business,flood,pages,proxy] [--seconds 20] [--browsers 500] [--drain-seconds 45] [--timeline]
 *
 * Phases, each with a fresh emulator and relay:
 *  - 300            300 items/s for --seconds, batches of 1–3, platform 50 ms per call;
 *  - 1500           1,500 items/s (above the key's 1,000 items/s ceiling), same otherwise;
 *  - slow-platform  300 items/s for half of --seconds with a platform taking 500 ms per call;
 *  - cpu            1,000 items/s (the key's ceiling) in batches of 10 for 15 s: the relay's CPU
 *                   per item where it matters, when the relay is busy (every phase reports its own);
 *  - business       4,000 items/s in batches of 10 to a business key (30 calls/s: the emulator's
 *                   --rate-limit 30 and RELAY_PLATFORM_RATE=30), whose ceiling is 3,000 items/s;
 *  - proxy          as 1500, while a server reads a person through the relay's proxy
 *                   (`/v1/person/get`) once a second: its answers, and the platform's 429s (deliveries and
 *                   proxy calls share the key's window);
 *  - flood          one address floods at 2,000 items/s (batches of 100, a new visitor and person
 *                   every 100 items, 20 tabs behind that address) while 300 other visitors send
 *                   100 items/s in all, for 15 s: the others' created → platform latency, how the
 *                   flood was answered (accepted, `retry`, 429, the Retry-After values), how many of
 *                   its items reached the platform only after the load stopped, in how long and at
 *                   what rate (target ≥ 900 items/s), and after a drain of up to twice
 *                   --drain-seconds, lost and duplicated for both; `--timeline` prints it second
 *                   by second (bench/lib/flood-timeline.ts);
 *  - pages          as real pages send: 1,500 browsers, each about one item a second, one item per
 *                   request (1,500 requests/s), for --seconds: what accepting costs per request.
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
import { createToken } from '../src/relay/core/tokens.js';
import { type Browsers, createBrowsers } from './lib/browsers.js';
import { type CliProcess, startCli } from './lib/cli.js';
import { floodTimeline } from './lib/flood-timeline.js';
import {
  benchSite,
  arrivals,
  callCounts,
  callFigures,
  defineActivities,
  ITEMS_PER_VISITOR,
  drainFigures,
  itemFigures,
  ORIGIN,
  PLATFORM_KEY,
  PLATFORM_RATE,
  round,
  SECRET,
  SITE_KEY,
} from './lib/platform-counts.js';

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    seconds: { type: 'string', default: '20' },
    browsers: { type: 'string', default: '500' },
    'drain-seconds': { type: 'string', default: '45' },
    // the flood phase second by second (bench/lib/flood-timeline.ts), printed after its figures
    timeline: { type: 'boolean', default: false },
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
  /** the browsers sending `rate` @default --browsers */
  browsers?: number;
  /** one address flooding at `rate` items/s, from `tabs` browsers behind it, beside the others */
  flood?: { rate: number; tabs: number };
  /** a server reads a person through the relay's proxy (`/v1/person/get`) once a second, from the offer's start to the drain's end */
  proxy?: true;
}
/** The flooding address (`X-Forwarded-For`): every flood visitor is behind it. */
const FLOOD_ADDRESS = '10.255.0.1';
const PHASES: Phase[] = [
  { name: '300', rate: 300, seconds: SECONDS, batch: [1, 3], latencyMs: 50 },
  { name: '1500', rate: 1500, seconds: SECONDS, batch: [1, 3], latencyMs: 50 },
  { name: 'slow-platform', rate: 300, seconds: Math.ceil(SECONDS / 2), batch: [1, 3], latencyMs: 500 },
  { name: 'cpu', rate: 1000, seconds: 15, batch: [10, 10], latencyMs: 50 },
  { name: 'business', rate: 4000, seconds: SECONDS, batch: [10, 10], latencyMs: 50, platformRate: 30 },
  { name: 'flood', rate: 100, seconds: 15, batch: [1, 3], latencyMs: 50, browsers: 300, flood: { rate: 2000, tabs: 20 } },
  { name: 'pages', rate: 1500, seconds: SECONDS, batch: [1, 1], latencyMs: 50, browsers: 1500 },
  { name: 'proxy', rate: 1500, seconds: SECONDS, batch: [1, 3], latencyMs: 50, proxy: true },
];
const only = values.only?.split(',');
const phases = PHASES.filter((p) => !only || only.includes(p.name));

async function runPhase(phase: Phase) {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-delivery-'));
  const started: CliProcess[] = [];
  const browsers: Browsers[] = [];
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
    const reader = phase.proxy ? await createToken({ name: 'bench-reader', scopes: ['read'] }) : undefined;
    const relay = await startCli(
      ['relay', '--port', '0', '--state-file', join(dir, 'relay-state.db')],
      {
        CDP_API_KEY: PLATFORM_KEY,
        CDP_BASE_URL: emulator.url,
        RELAY_SITES: JSON.stringify([{ key: SITE_KEY, origins: [ORIGIN], verify: 'required' }]),
        RELAY_IDENTITY_SECRET: SECRET,
        RELAY_TRUST_PROXY: '127.0.0.1',
        RELAY_PLATFORM_RATE: String(phase.platformRate ?? PLATFORM_RATE),
        ...(reader ? { RELAY_TOKENS: JSON.stringify([reader.entry]) } : {}),
      },
      30_000,
      // e.g. BENCH_RELAY_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof": profile the relay alone
      process.env['BENCH_RELAY_NODE_ARGS']?.split(' ').filter(Boolean) ?? [],
    );
    started.push(relay);
    const open = (options: { browsers: number; itemsPerVisitor: number; address?: (n: number) => string; prefix?: string }) => {
      const set = createBrowsers({
        ...benchSite(relay.url),
        ...options,
      });
      browsers.push(set);
      return set;
    };
    const b = open({ browsers: phase.browsers ?? BROWSERS, itemsPerVisitor: ITEMS_PER_VISITOR });
    // 100 items per flood visitor (its identify, then 99 tracks): 25 per activity, under the platform's daily cap per person.
    const flood = phase.flood && open({ browsers: phase.flood.tabs, itemsPerVisitor: 100, address: () => FLOOD_ADDRESS, prefix: 'flood' });
    const callsBefore = await callCounts(emulator.url, PLATFORM_KEY);
    const cpuBefore = relay.cpuMs();
    const offerStart = Date.now();
    // The server's reads: one a second through the relay's proxy, each answer's status kept.
    const proxied: number[] = [];
    let reading = reader !== undefined;
    const reads = (async () => {
      while (reading && reader) {
        const response = await fetch(`${relay.url}/v1/person/get`, {
          method: 'POST',
          headers: { authorization: `Bearer ${reader.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ limit: 1 }),
        }).catch(() => undefined);
        await response?.arrayBuffer();
        proxied.push(response?.status ?? 0);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    })();
    const progress = async (label: string) => {
      const now = callFigures(callsBefore, await callCounts(emulator.url, PLATFORM_KEY));
      const floodLine = flood ? `; flood made ${flood.made.size}, held ${flood.held()}, answered retry ${flood.retried()}` : '';
      console.log(
        `[${phase.name}] ${label}: made ${b.made.size}, held by browsers ${b.held()}, /collect answers ${b.calls.length}${floodLine}, at the platform ${now.entries} in ${now.applied} calls (429: ${now.limited})`,
      );
    };
    await Promise.all([
      b.offer(phase.rate, phase.seconds, phase.batch, (s) => void progress(`${s} s`)),
      flood?.offer(phase.flood!.rate, phase.seconds, [100, 100], () => {}),
    ]);
    const offer = { start: offerStart, end: Date.now(), endTick: performance.now() };
    const accepted = () => browsers.reduce((n, set) => n + [...set.made.values()].filter((m) => m.status === 'accepted' || m.status === 'duplicate').length, 0);
    // A flood leaves a backlog the key's budget drains at its pace: twice the drain.
    const drainSeconds = DRAIN_SECONDS * (flood ? 2 : 1);
    const drained = (
      await Promise.all(
        browsers.map((set) =>
          set.drain(
            offer.end + drainSeconds * 1000,
            async () => callFigures(callsBefore, await callCounts(emulator.url, PLATFORM_KEY)).entries >= accepted(),
            // the flood, when there is one, drains last: it reports
            set === browsers.at(-1) ? () => void progress(`drain ${Math.round((Date.now() - offer.end) / 1000)} s`) : () => {},
          ),
        ),
      )
    ).every(Boolean);
    const drainEnd = Date.now();
    reading = false;
    await reads;
    const cpuMs = relay.cpuMs() - cpuBefore;
    const calls = callFigures(callsBefore, await callCounts(emulator.url, PLATFORM_KEY));
    const seen = await arrivals(emulator.url, PLATFORM_KEY);
    const items = browsers.reduce((n, set) => n + set.made.size, 0);
    if (flood && values.timeline) console.table(floodTimeline(flood, b, seen, offer.end));
    return {
      offered_items_per_second: phase.rate,
      browsers: phase.browsers ?? BROWSERS,
      batch: phase.batch,
      platform_ms_per_call: phase.latencyMs,
      key_calls_per_second: phase.platformRate ?? PLATFORM_RATE,
      offer_seconds: round((offer.end - offer.start) / 1000, 1),
      ...itemFigures(b, seen, offer),
      ...(flood
        ? {
            flood: {
              offered_items_per_second: phase.flood!.rate,
              address: 'one',
              tabs: phase.flood!.tabs,
              ...itemFigures(flood, seen, offer),
              // Once the others stop: the flood's backlog, how long it took to go, and at what rate.
              ...drainFigures(flood, seen, offer),
            },
          }
        : {}),
      ...(reader
        ? {
            proxy: {
              calls: proxied.length,
              answered_429: proxied.filter((status) => status === 429).length,
              answered_2xx: proxied.filter((status) => status >= 200 && status < 300).length,
            },
          }
        : {}),
      drained,
      drain_seconds: round((drainEnd - offer.end) / 1000, 1),
      platform_calls: calls.calls,
      platform_calls_per_second: round(calls.calls / ((drainEnd - offer.start) / 1000), 1),
      platform_429: calls.limited,
      platform_429_share: round(calls.limited / Math.max(1, calls.calls), 4),
      entries_per_call: round(calls.entries / Math.max(1, calls.applied), 1),
      relay_cpu_ms_per_100_items: round(cpuMs / (items / 100)),
    };
  } finally {
    for (const set of browsers) set.close();
    for (const child of started.reverse()) await child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const loadBefore = loadavg();
type PhaseResult = Awaited<ReturnType<typeof runPhase>>;
const RESULTS = new URL('./results/delivery.json', import.meta.url);
// With --only, the phases not run keep their last figures (each records the commit it ran on).
const results: Record<string, PhaseResult & { commit?: string; load_average?: (number | null)[] }> =
  only && existsSync(RESULTS) ? (JSON.parse(readFileSync(RESULTS, 'utf8')) as { phases: Record<string, PhaseResult> }).phases : {};
for (const phase of phases) {
  console.log(
    `━━ ${phase.name}: ${phase.rate} items/s for ${phase.seconds} s, batches of ${phase.batch.join('–')}, platform ${phase.latencyMs} ms per call ━━`,
  );
  const before = loadavg()[0]!;
  // Each phase records its commit and the load it ran at: with --only, phases of other runs stay.
  results[phase.name] = { ...(await runPhase(phase)), commit: headCommit(), load_average: [round(before), round(loadavg()[0]!)] };
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
    platform_429_calls_with_proxy: 0,
    platform_429_calls_at_1500: 0,
    delivered_per_second_at_business: 2700,
    entries_per_call_at_1500: 90,
    collect_p50_ms_slow_platform: 20,
    relay_cpu_ms_per_100_items_batch_10: 3,
    others_p50_ms_in_flood: 2000,
    // once the others stop, the flooding address goes at (nearly) the key's whole pace (issue 36)
    flood_drain_per_second: 900,
    delivered_per_second_at_pages: 900,
    p50_ms_at_pages: 2000,
    collect_timeouts_at_pages: 0,
    platform_429_calls_at_pages: 0,
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
