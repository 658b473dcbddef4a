/**
 * Benchmark: what durable-on-commit costs the SQLite outbox. `accept` (what /collect waits on)
 * with the relay's settings, `synchronous=NORMAL` and the WAL fdatasynced in the thread pool
 * before any call of a commit is answered (sqlite-wal.ts), against `synchronous=FULL` (the fsync
 * inside every commit, on the event loop: the relay before) and `NORMAL` with no sync at all (a
 * commit reaches the WAL file, not the disk: not durable, the floor), on a real file in the temp
 * directory:
 *  - sequential: one accept of 10 items at a time, so every accept is its own commit and sync;
 *  - concurrent: 50 accepts of 10 items in flight at once (a busy relay), which group commit
 *    folds into one transaction per group.
 * Each for `--seconds` (default 5), with the CPU per 100 items and the share of time the event
 * loop was busy (what an fsync inside the commit takes from HTTP); the load average is recorded
 * beside the figures (the machine is shared).
 *
 *   npx tsx bench/durability.ts [--seconds 5]
 *
 * Writes bench/results/durability.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Outbox, OutboxItem } from '../src/relay/state/outbox.js';
import { createSqlOutbox } from '../src/relay/state/sql-outbox.js';
import { durabilityOf, openSqlite } from '../src/relay/state/sqlite-file.js';
import { sqlitePort } from '../src/relay/state/sqlite-outbox.js';
import { walSync } from '../src/relay/state/sqlite-wal.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' } } });
const SECONDS = Number(values.seconds);
const BATCH = 10;
const CONCURRENT = 50;
const WINDOW_MS = 3600_000;

const item = (id: string): OutboxItem => ({
  site: 'pk_bench',
  id,
  kind: 'activity',
  entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': 'bench@example.com' } },
  browser: 'b',
  visitor: 'v',
  accepted: Date.now(),
});
const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

/**
 * `lanes` loops of accept for SECONDS: accepts/s, items/s, per-accept latency, the process's CPU
 * per 100 items (the thread pool's syncs included) and how busy the event loop was (1: never free
 * to serve a request; an fsync inside the commit counts as busy).
 */
async function run(outbox: Outbox, lanes: number) {
  const latencies: number[] = [];
  let n = 0;
  const cpu = process.cpuUsage();
  const loop = performance.eventLoopUtilization();
  const end = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (performance.now() < end) {
        const batch = Array.from({ length: BATCH }, () => item(`${++n}-${crypto.randomUUID()}`));
        const started = performance.now();
        await outbox.accept(batch, Date.now(), WINDOW_MS);
        latencies.push(performance.now() - started);
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  const busy = performance.eventLoopUtilization(loop).utilization;
  latencies.sort((a, b) => a - b);
  return {
    cpu_ms_per_100_items: round((used.user + used.system) / 10 / (latencies.length * BATCH)),
    event_loop_busy: round(busy),
    accepts_per_second: Math.round(latencies.length / SECONDS),
    items_per_second: Math.round((latencies.length * BATCH) / SECONDS),
    p50_ms: round(quantile(latencies, 0.5)),
    p99_ms: round(quantile(latencies, 0.99)),
  };
}

async function measure(mode: 'FULL' | 'NORMAL' | 'synced') {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-durability-'));
  try {
    const path = join(dir, 'relay-state.db');
    const db = await openSqlite(path, 5000, 'bench/durability.ts', mode === 'synced');
    if (mode !== 'synced') db.exec(`PRAGMA synchronous = ${mode}`);
    const wal = mode === 'synced' ? walSync(path) : undefined;
    const store = await createSqlOutbox(sqlitePort(db, wal?.sync));
    const result = { pragma: durabilityOf(db, wal !== undefined), sequential: await run(store.outbox, 1), concurrent: await run(store.outbox, CONCURRENT) };
    db.close();
    await wal?.close();
    console.log(JSON.stringify(result));
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const before = loadavg();
// The relay's, FULL, no sync, then the relay's again: the machine's load drifts, so the first figure is checked by the last.
const synced = await measure('synced');
const full = await measure('FULL');
const normal = await measure('NORMAL');
const syncedAgain = await measure('synced');
const result = {
  date: new Date().toISOString(),
  cpus: availableParallelism(),
  load_average: { before: before.map((x) => round(x)), after: loadavg().map((x) => round(x)) },
  seconds: SECONDS,
  batch: BATCH,
  concurrent: CONCURRENT,
  synced: [synced, syncedAgain],
  full,
  normal: [normal],
};
mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
writeFileSync(join(import.meta.dirname, 'results', 'durability.json'), `${JSON.stringify(result, null, 2)}\n`);
console.log(`wrote bench/results/durability.json`);
