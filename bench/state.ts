/**
 * Benchmark: the relay's state stores on Node. What a relay pays per /collect for dedupe (one
 * claim and one settle of a 10-item batch), and whether the SQLite file stays bounded and opens
 * fast with a million remembered ids.
 *
 *   npx tsx bench/state.ts [--ids 1000000]
 *
 *  - SQLite: `--ids` ids forwarded through claim + settle in 10-id batches (as /collect does),
 *    marked to expire 20 s later; the file's size; the time to close, reopen and answer the first
 *    claim. Then the same number again after the first ones expired, with expiry running inside
 *    the claims: the file must not grow to twice the size.
 *  - Throughput, one process: claim + settle pairs per second for memory, SQLite and a real
 *    redis-server (started on a free loopback port; skipped with a note when none is installed).
 * Writes bench/results/state.json.
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { uuid } from '../src/browser/uuid.js';
import { createMemoryStore } from '../src/relay/memory.js';
import { createRedisState } from '../src/relay/state/redis.js';
import { createSqliteStore } from '../src/relay/state/sqlite.js';
import type { RelayStore } from '../src/relay/store.js';
import { startRedis } from '../test/support/redis.js';

const newId = process.env['BENCH_ID_KIND'] === 'v4' ? () => crypto.randomUUID() : uuid;
const { values } = parseArgs({ options: { ids: { type: 'string', default: '1000000' } } });
const IDS = Number(values.ids);
const BATCH = 10;
const LEASE_MS = 38_000;
const TTL_MS = 20_000;
const site = { site: 'pk_bench' };

const fileBytes = (path: string) => ['', '-wal', '-shm'].reduce((sum, suffix) => sum + (statSync(path + suffix, { throwIfNoEntry: false })?.size ?? 0), 0);
const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

/** Forwards `count` fresh ids with prefix `prefix` as /collect would: one claim and one settle per 10. */
async function forwardIds(store: RelayStore, prefix: string, count: number, ttlMs: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < count; i += BATCH) {
    // Ids as the snippet makes them (time-ordered v7 UUIDs; BENCH_ID_KIND=v4 for random ones, which land all over the table).
    const ids = Array.from({ length: Math.min(BATCH, count - i) }, () => `${prefix}-${newId()}`);
    const now = Date.now();
    const claim = await store.claim(site, ids, now, LEASE_MS);
    await store.settle(site, { forwarded: claim.fresh, until: now + ttlMs, released: [] });
    if (i > 0 && i % 200_000 === 0) console.log(`  ${prefix}: ${i.toLocaleString('en')} of ${count.toLocaleString('en')} ids`);
  }
  return performance.now() - started;
}

async function reopenMs(path: string): Promise<number> {
  const started = performance.now();
  const store = await createSqliteStore(path);
  await store.claim(site, ['after-restart'], Date.now(), LEASE_MS);
  const ms = performance.now() - started;
  await store.close();
  return Math.round(ms * 10) / 10;
}

async function throughput(name: string, store: RelayStore, pairs = 20_000): Promise<{ store: string; pairs_per_second: number; us_per_pair: number }> {
  const ms = await forwardIds(store, `tp-${name}-${Date.now()}`, pairs * BATCH, 60_000);
  return { store: name, pairs_per_second: Math.round((pairs / ms) * 1000), us_per_pair: Math.round((ms / pairs) * 1000) };
}

const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-state-'));
const path = join(dir, 'relay-state.db');
console.log(`SQLite at ${IDS.toLocaleString('en')} ids (claim + settle of ${BATCH} per request)`);
let store = await createSqliteStore(path);
const firstMs = await forwardIds(store, 'gen1', IDS, TTL_MS);
await store.close();
const atPeak = { ids: IDS, bytes: fileBytes(path), reopen_ms: await reopenMs(path) };
console.log(`  ${IDS.toLocaleString('en')} ids in ${Math.round(firstMs / 1000)} s; file ${mb(atPeak.bytes)} MB; reopen + first claim ${atPeak.reopen_ms} ms`);

const wait = TTL_MS - firstMs + 1000;
if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
store = await createSqliteStore(path);
await forwardIds(store, 'gen2', IDS, TTL_MS);
const stats = await store.stats();
await store.close();
const afterExpiry = { ids_remembered: stats?.remembered, bytes: fileBytes(path), reopen_ms: await reopenMs(path) };
console.log(
  `  after the first ${IDS.toLocaleString('en')} expired and ${IDS.toLocaleString('en')} more came: ${stats?.remembered} remembered; file ${mb(afterExpiry.bytes)} MB; reopen ${afterExpiry.reopen_ms} ms`,
);
rmSync(dir, { recursive: true, force: true });

const rates = [await throughput('memory', createMemoryStore())];
const tpDir = mkdtempSync(join(tmpdir(), 'cdp-bench-state-'));
const sqlite = await createSqliteStore(join(tpDir, 'tp.db'));
rates.push(await throughput('SQLite', sqlite));
await sqlite.close();
rmSync(tpDir, { recursive: true, force: true });
let redisNote: string | undefined;
try {
  const server = await startRedis();
  const redis = await createRedisState(server.url);
  rates.push(await throughput('Redis', redis.store));
  await redis.store.close();
  await server.close();
} catch (error) {
  redisNote = `Redis not measured: ${(error as Error).message}`;
  console.log(redisNote);
}
for (const rate of rates) console.log(`  ${rate.store}: ${rate.pairs_per_second.toLocaleString('en')} claim+settle pairs/s (${rate.us_per_pair} µs each)`);

const result = {
  benchmark: 'state',
  date: new Date().toISOString(),
  machine: { cpus: availableParallelism(), load_average_1m: Math.round(loadavg()[0]! * 100) / 100, node: process.version },
  batch_ids: BATCH,
  sqlite: {
    seconds_to_forward: Math.round(firstMs / 100) / 10,
    at_peak: { ...atPeak, megabytes: mb(atPeak.bytes) },
    after_expiry: { ...afterExpiry, megabytes: mb(afterExpiry.bytes) },
    target_reopen_ms: 1000,
  },
  throughput: rates,
  ...(redisNote ? { note: redisNote } : {}),
};
mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
writeFileSync(join(import.meta.dirname, 'results', 'state.json'), `${JSON.stringify(result, null, 2)}\n`);
console.log('wrote bench/results/state.json');
