/**
 * Diagnose: what the built relay costs per wall-clock second and per item at a fixed offered
 * rate, idle included. For each rate, a fresh `cdp-edge emulator --rate-limit 10` and `cdp-edge
 * relay` (the delivery bench's set-up), the delivery bench's browsers sending `rate` items/s in
 * batches of --batch for --seconds, then the drain until the platform has every item. Prints the
 * relay's CPU per second and per 100 items, by thread (node's main thread, libuv's pool where the
 * WAL's fdatasync runs, the rest: V8's compiler and GC helpers), and the CPU per 100 items of each
 * 5 s of the offer. Rate 0 is the relay left idle for --seconds. --warmup N: the same offer for N
 * s first, unmeasured, on the same relay (what a relay that has run a while costs, its code
 * optimised); --state memory: the memory outbox instead of the SQLite file; --platform-rate: the
 * relay's RELAY_PLATFORM_RATE (its calls a second); --tick: ms between the offer's sends (5, as the
 * delivery bench; 1 spreads single-item requests as pages send them); --disk: the relay's syncs, WAL
 * frames and checkpointed pages per 100 items and requests per sync, counted by the kernel (`perf
 * stat`, bench/lib/syscalls.ts). Prints only; read it with the load average.
 *
 * What V8 compiles and throws away in the relay: BENCH_RELAY_NODE_ARGS="--trace-opt --trace-deopt"
 * BENCH_RELAY_STDOUT=<file> (its output, log lines and V8's trace, appended to the file).
 *
 *   npm run build && npx tsx bench/diagnose/rate-cost.ts [--rates 0,300,1000] [--batch 10] [--seconds 15] [--browsers 500] [--warmup 0] [--state file|memory] [--platform-rate 10] [--tick 5] [--disk]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createBrowsers } from '../lib/browsers.js';
import { processCpuMs, startCli } from '../lib/cli.js';
import { countDisk } from '../lib/syscalls.js';
import {
  benchSite,
  callCounts,
  callFigures,
  defineActivities,
  ITEMS_PER_VISITOR,
  ORIGIN,
  PLATFORM_KEY,
  PLATFORM_RATE,
  SECRET,
  SITE_KEY,
} from '../lib/platform-counts.js';

const { values } = parseArgs({
  options: {
    rates: { type: 'string', default: '0,300,1000' },
    batch: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '15' },
    browsers: { type: 'string', default: '500' },
    // the relay's RELAY_PLATFORM_RATE (calls a second it makes at most; the emulator allows 10)
    'platform-rate': { type: 'string', default: String(PLATFORM_RATE) },
    // the relay's state: its SQLite file (as the CLI runs by default), or `memory`
    state: { type: 'string', default: 'file' },
    // seconds of the same offer before the measured window, on the same relay: its code warmed up
    warmup: { type: 'string', default: '0' },
    // ms between the offer's sends (5 by default, as the delivery bench: a few requests at once; 1 spreads them as pages do)
    tick: { type: 'string', default: '5' },
    // count the relay's syncs and WAL writes over the measured window (perf stat, bench/lib/syscalls.ts)
    disk: { type: 'boolean', default: false },
  },
});
const RATES = values.rates.split(',').map(Number);
const BATCH = Number(values.batch);
const SECONDS = Number(values.seconds);
const BROWSERS = Number(values.browsers);
const TICK = Number(values.tick);

/** CPU ms (user, system) of each thread of `pid`, by kind of thread (/proc's clock ticks, 10 ms on Linux). */
function threads(pid: number): Map<string, { user: number; sys: number }> {
  const byName = new Map<string, { user: number; sys: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const key = tid === String(pid) ? 'main' : name.startsWith('libuv') ? 'libuv pool' : 'other';
    const was = byName.get(key) ?? { user: 0, sys: 0 };
    byName.set(key, { user: was.user + Number(fields[11]) * 10, sys: was.sys + Number(fields[12]) * 10 });
  }
  return byName;
}

const rows: Record<string, unknown>[] = [];
for (const rate of RATES) {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-edge-rate-cost-'));
  const emulator = await startCli(['emulator', '--port', '0', '--key', PLATFORM_KEY, '--rate-limit', String(PLATFORM_RATE), '--latency-ms', '50']);
  await defineActivities(emulator.url);
  const file = join(dir, 'relay-state.db');
  const relay = await startCli(
    ['relay', '--port', '0', '--state-file', values.state === 'memory' ? ':memory:' : file],
    {
      CDP_API_KEY: PLATFORM_KEY,
      CDP_BASE_URL: emulator.url,
      RELAY_SITES: JSON.stringify([{ key: SITE_KEY, origins: [ORIGIN], verify: 'required' }]),
      RELAY_IDENTITY_SECRET: SECRET,
      RELAY_TRUST_PROXY: '127.0.0.1',
      RELAY_PLATFORM_RATE: values['platform-rate'],
    },
    30_000,
    // e.g. BENCH_RELAY_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof", as the delivery bench
    process.env['BENCH_RELAY_NODE_ARGS']?.split(' ').filter(Boolean) ?? [],
  );
  const pid = relay.child.pid!;
  const load = loadavg()[0]!.toFixed(1);
  const browsers = createBrowsers({
    ...benchSite(relay.url),
    browsers: BROWSERS,
    itemsPerVisitor: ITEMS_PER_VISITOR,
  });
  // Let the start settle first (and, with --warmup, the relay's code warm up under the same offer).
  await new Promise((resolve) => setTimeout(resolve, 2000));
  if (rate > 0 && Number(values.warmup) > 0) {
    await browsers.offer(rate, Number(values.warmup), [BATCH, BATCH], () => {}, TICK);
    await new Promise((resolve) => setTimeout(resolve, 5000));
    browsers.made.clear();
  }
  const disk = values.disk ? await countDisk(pid, file) : undefined;
  const before = threads(pid);
  const callsBefore = await callCounts(emulator.url, PLATFORM_KEY);
  const start = Date.now();
  const startedAt = performance.now();
  if (rate === 0) await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  else {
    // The cost of each 5 s of the offer: whether it falls as the relay's code warms up.
    let mark = { cpu: processCpuMs(pid), items: 0 };
    const windows: string[] = [];
    await browsers.offer(
      rate,
      SECONDS,
      [BATCH, BATCH],
      (elapsed) => {
        if (elapsed % 5 !== 0) return;
        const now = { cpu: processCpuMs(pid), items: browsers.made.size };
        windows.push(`${elapsed - 5}–${elapsed} s: ${Math.round(((now.cpu - mark.cpu) / ((now.items - mark.items) / 100)) * 10) / 10}`);
        mark = now;
      },
      TICK,
    );
    console.log(`rate ${rate}: CPU ms per 100 items made, by 5 s of the offer: ${windows.join(', ')}`);
    const accepted = () => [...browsers.made.values()].filter((m) => m.status === 'accepted' || m.status === 'duplicate').length;
    await browsers.drain(
      Date.now() + 60_000,
      async () => callFigures(callsBefore, await callCounts(emulator.url, PLATFORM_KEY)).entries >= accepted(),
      () => {},
    );
  }
  const seconds = (Date.now() - start) / 1000;
  const after = threads(pid);
  const items = browsers.made.size;
  const measured = browsers.calls.filter((call) => call.sentAt >= startedAt);
  const requests = measured.length;
  const ms = measured.map((call) => call.ms).sort((a, b) => a - b);
  const at = (q: number) => Math.round((ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? 0) * 10) / 10;
  const row: Record<string, unknown> = {
    rate,
    items,
    requests,
    seconds: Math.round(seconds * 10) / 10,
    load,
    'collect p50 ms': at(0.5),
    'collect p99 ms': at(0.99),
  };
  if (disk) {
    const counted = await disk.stop();
    const per100 = (n: number) => Math.round((n / (items / 100)) * 100) / 100;
    // every sync, the outbox's WAL syncs (one a group commit) and any other
    row['syncs/s'] = Math.round(((counted.fdatasync + counted.fsync) / seconds) * 10) / 10;
    row['syncs/100 items'] = per100(counted.fdatasync + counted.fsync);
    row['WAL frames/100 items'] = per100(counted.walWrites / 2);
    row['db pages/100 items'] = per100(counted.dbWrites);
    row['checkpoints/100 items'] = per100(counted.dbSyncs);
    row['requests a sync'] = Math.round((requests / (counted.fdatasync + counted.fsync)) * 100) / 100;
  }
  let total = 0;
  for (const [name, { user, sys }] of after) {
    const was = before.get(name) ?? { user: 0, sys: 0 };
    const ms = user - was.user + (sys - was.sys);
    total += ms;
    row[`${name} user ms/s`] = Math.round((user - was.user) / seconds);
    row[`${name} sys ms/s`] = Math.round((sys - was.sys) / seconds);
  }
  row['cpu ms/s'] = Math.round(total / seconds);
  row['cpu ms/100 items'] = items === 0 ? null : Math.round((total / (items / 100)) * 100) / 100;
  rows.push(row);
  console.log(row);
  browsers.close();
  await relay.stop();
  await emulator.stop();
  rmSync(dir, { recursive: true, force: true });
}
console.table(rows);
