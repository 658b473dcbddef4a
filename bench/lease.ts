/**
 * Benchmark: what a lease costs with identify before track as a rule of the store's lease, and how
 * its work grows with a backlog it cannot take. First, the work of one lease of 100 beside a
 * backlog of `--grow` sizes (default 1,000, 10,000 and 50,000) held behind identifies (each
 * browser an identify leased and not yet settled, then 99 tracks) with 100 new visitors ready:
 * rows the SQLite statements answered or changed, Redis commands (INFO commandstats), entries and
 * lanes the memory outbox looked at, and the lease's time. Then the drain: a
 * backlog of `--entries` (default 20,000) waits in the outbox, then is drained by leases of 1,000
 * delivered at once, for each store (memory, an SQLite file, a real redis-server):
 *  - `tracks`: activities only (nothing for the rule to hold);
 *  - `identify+track`: each browser an identify then two tracks (a third of the entries merges),
 *    so every track waits until its browser's merge is delivered.
 * For each: the time of one lease (p50, max), leases taken and entries per lease. The load average
 * is recorded beside the figures (the machine is shared).
 *
 *   npx tsx bench/lease.ts [--entries 20000] [--grow 1000,10000,50000] [--out file] [--before file]
 *
 * Writes bench/results/lease.json (or `--out`); `--before` adds the results a run of the previous
 * code wrote (there, the leader held tracks in its memory, not the store).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createMemoryOutbox } from '../src/relay/state/memory-outbox.js';
import type { Outbox, OutboxItem } from '../src/relay/state/outbox.js';
import { createRedisOutbox } from '../src/relay/state/redis-outbox.js';
import { createSqlOutbox } from '../src/relay/state/sql-outbox.js';
import { openSqlite } from '../src/relay/state/sqlite-file.js';
import { createSqliteOutbox, sqlitePort } from '../src/relay/state/sqlite-outbox.js';
import { redisAvailable, startRedis } from '../test/support/redis.js';
import { countingRows } from '../test/support/sql-rows.js';

const { values } = parseArgs({
  options: {
    entries: { type: 'string', default: '20000' },
    grow: { type: 'string', default: '1000,10000,50000' },
    out: { type: 'string' },
    before: { type: 'string' },
  },
});
const GROW = values.grow.split(',').map(Number);
const ENTRIES = Number(values.entries);
const LEASE = 1_000;
const WINDOW_MS = 3600_000;
const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

type Mix = 'tracks' | 'identify+track';

/** The backlog: 100 visitors; in `identify+track` each browser's identify comes before its two tracks. */
function backlog(mix: Mix): OutboxItem[] {
  return Array.from({ length: ENTRIES }, (_, n) => {
    const browser = `b${Math.floor(n / 3)}`;
    const merge = mix === 'identify+track' && n % 3 === 0;
    return {
      site: 'pk_bench',
      id: `${mix}-${n}`,
      kind: merge ? 'merge' : 'activity',
      entry: merge
        ? { fields: { 'str::email': `${browser}@example.com` } }
        : { activity_id: 'act:cm:viewed', fields: { 'str::email': `${browser}@example.com` } },
      browser,
      visitor: `v${Math.floor(n / 3) % 100}`,
      accepted: Date.now(),
    } satisfies OutboxItem;
  });
}

/** Fills `outbox`, then drains it by leases of 1,000 settled at once: each lease's time. */
async function drain(outbox: Outbox, mix: Mix) {
  const items = backlog(mix);
  for (let i = 0; i < items.length; i += 100) await outbox.accept(items.slice(i, i + 100), Date.now(), WINDOW_MS);
  const times: number[] = [];
  let leased = 0;
  for (let n = 0; leased < ENTRIES; n++) {
    const started = performance.now();
    const lease = await outbox.lease(`bench#${n}`, LEASE, Date.now(), 60_000);
    times.push(performance.now() - started);
    if (lease.length === 0) throw new Error(`nothing ready with ${ENTRIES - leased} entries waiting`);
    leased += lease.length;
    await outbox.settle(`bench#${n}`, { delivered: lease.map((entry) => entry.seq), released: [], dead: [] }, Date.now());
  }
  times.sort((a, b) => a - b);
  return {
    mix,
    leases: times.length,
    entries_per_lease: Math.round(ENTRIES / times.length),
    p50_ms: round(times[Math.floor(times.length / 2)]!),
    max_ms: round(times.at(-1)!),
  };
}

/** `count` entries held behind identifies (browsers of an identify, leased, and 99 tracks), then 100 new visitors: one lease of 100's work. */
async function grown(outbox: Outbox, count: number, work: () => Promise<number>) {
  const now = Date.now();
  const items: OutboxItem[] = [];
  for (let b = 0; b < count / 100; b++)
    for (let t = 0; t < 100; t++)
      items.push({
        site: 'pk_bench',
        id: `g${b}-${t}`,
        kind: t === 0 ? 'merge' : 'activity',
        entry: { fields: { 'str::email': `g${b}@example.com` } },
        browser: `gb${b}`,
        visitor: `gv${b}`,
        accepted: now,
      });
  for (let i = 0; i < items.length; i += 1000) await outbox.accept(items.slice(i, i + 1000), now, WINDOW_MS);
  await outbox.lease('identifies', count / 100, now, WINDOW_MS);
  const fresh = Array.from({ length: 100 }, (_, n): OutboxItem => ({ ...items[1]!, id: `new${n}`, browser: `nb${n}`, visitor: `nv${n}` }));
  await outbox.accept(fresh, now, WINDOW_MS);
  const start = await work();
  const started = performance.now();
  const leased = await outbox.lease('probe', 100, now + 1, 60_000);
  const ms = performance.now() - started;
  return { backlog: count, leased: leased.length, work: (await work()) - start, ms: round(ms) };
}

/** A new SQLite file's outbox whose statements' rows are counted. */
async function countedSqlite(path: string) {
  const db = await openSqlite(path, 5000, 'bench');
  const counted = countingRows(sqlitePort(db));
  return { outbox: (await createSqlOutbox(counted.port)).outbox, rows: async () => counted.rows(), close: () => db.close() };
}

const before = loadavg().map((x) => round(x));
const growth: { store: string; unit: string; runs: Awaited<ReturnType<typeof grown>>[] }[] = [];
{
  const runs = [];
  for (const size of GROW) {
    const outbox = createMemoryOutbox();
    runs.push(await grown(outbox, size, async () => ('looked' in outbox ? (outbox as { looked(): number }).looked() : Number.NaN)));
  }
  growth.push({ store: 'memory', unit: 'entries and lanes looked at', runs });
}
{
  const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-grow-'));
  const runs = [];
  for (const size of GROW) {
    const store = await countedSqlite(join(dir, `${size}.db`));
    runs.push(await grown(store.outbox, size, store.rows));
    store.close();
  }
  rmSync(dir, { recursive: true, force: true });
  growth.push({ store: 'SQLite', unit: 'rows answered or changed', runs });
}
if (redisAvailable('the Redis lease bench')) {
  const redis = await startRedis();
  const stats = new Redis(redis.url);
  const commands = async () =>
    [...(await stats.info('commandstats')).matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)]
      .filter(([, name]) => name !== 'info')
      .reduce((sum, [, , calls]) => sum + Number(calls), 0);
  const runs = [];
  for (const size of GROW) {
    const store = await createRedisOutbox(redis.url, { prefix: `grow-${size}:` });
    runs.push(await grown(store.outbox, size, commands));
    await store.close();
  }
  stats.disconnect();
  await redis.close();
  growth.push({ store: 'Redis', unit: 'commands', runs });
}

const results: { store: string; runs: Awaited<ReturnType<typeof drain>>[] }[] = [];
const mixes: Mix[] = ['tracks', 'identify+track'];

results.push({ store: 'memory', runs: [await drain(createMemoryOutbox(), 'tracks'), await drain(createMemoryOutbox(), 'identify+track')] });
const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-lease-'));
const sqlite: Awaited<ReturnType<typeof drain>>[] = [];
for (const mix of mixes) {
  const store = await createSqliteOutbox(join(dir, `${mix}.db`));
  sqlite.push(await drain(store.outbox, mix));
  await store.close();
}
results.push({ store: 'SQLite', runs: sqlite });
rmSync(dir, { recursive: true, force: true });
if (redisAvailable('the Redis lease bench')) {
  const redis = await startRedis();
  const runs: Awaited<ReturnType<typeof drain>>[] = [];
  for (const mix of mixes) {
    const store = await createRedisOutbox(redis.url, { prefix: `bench-${mix}:` });
    runs.push(await drain(store.outbox, mix));
    await store.close();
  }
  await redis.close();
  results.push({ store: 'Redis', runs });
}

const result = {
  date: new Date().toISOString(),
  cpus: availableParallelism(),
  load_average: { before, after: loadavg().map((x) => round(x)) },
  entries: ENTRIES,
  lease: LEASE,
  growth,
  results,
  ...(values.before ? { previous_code: JSON.parse(readFileSync(values.before, 'utf8')) as unknown } : {}),
};
console.log(JSON.stringify(result, null, 2));
mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
writeFileSync(values.out ?? join(import.meta.dirname, 'results', 'lease.json'), `${JSON.stringify(result, null, 2)}\n`);
