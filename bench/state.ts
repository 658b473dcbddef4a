/**
 * Benchmark: the relay's state stores on Node. What a relay pays per /collect for dedupe (one
 * claim and one settle of a 10-item batch), and whether the SQLite file stays bounded and opens
 * fast with a million remembered ids.
 *
 *   npx tsx bench/state.ts [--ids 1000000] [--part all|state|outbox]
 *
 *  - SQLite: `--ids` ids forwarded through claim + settle in 10-id batches (as /collect does),
 *    marked to expire 20 s later; the file's size; the time to close, reopen and answer the first
 *    claim. Then the same number again after the first ones expired, with expiry running inside
 *    the claims: the file must not grow to twice the size.
 *  - Throughput, one process: claim + settle pairs per second for memory, SQLite and a real
 *    redis-server (started on a free loopback port; skipped with a note when none is installed).
 *  - The outbox's memory of ids (the dedupe window): `--ids` items accepted in 10-item batches and
 *    delivered as they go (the outbox itself stays small, as under a running deliverer), so what
 *    grows is the remembered ids: the SQLite file's growth (and the id table + index, from
 *    `dbstat`), and Redis's `INFO memory` used_memory growth. Beside them, the two Redis layouts
 *    one could choose (a key with a TTL per id, which the outbox uses, against a sorted set or a
 *    hash per site per day), filled raw through a pipeline. Each projected to a 7-day window at 300 items/s.
 * Writes bench/results/state.json.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { uuid } from '../src/browser/uuid.js';
import { compactId } from '../src/relay/state/ids.js';
import type { OutboxStore } from '../src/relay/state/outbox.js';
import { createMemoryStore } from '../src/relay/state/memory.js';
import { createRedisState } from '../src/relay/state/redis.js';
import { createRedisOutbox } from '../src/relay/state/redis-outbox.js';
import { createSqliteStore } from '../src/relay/state/sqlite.js';
import { createSqliteOutbox } from '../src/relay/state/sqlite-outbox.js';
import type { RelayStore } from '../src/relay/state/store.js';
import { startRedis } from '../test/support/redis.js';

const newId = process.env['BENCH_ID_KIND'] === 'v4' ? () => crypto.randomUUID() : uuid;
const { values } = parseArgs({ options: { ids: { type: 'string', default: '1000000' }, part: { type: 'string', default: 'all' } } });
const IDS = Number(values.ids);
const PART = values.part;
if (PART !== 'all' && PART !== 'state' && PART !== 'outbox') throw new Error(`--part must be all, state or outbox; got ${JSON.stringify(PART)}`);
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

/** A 7-day window at 300 items/s: the ids one relay deployment remembers at once. */
const WINDOW_IDS = 300 * 7 * 86_400;
const OUTBOX_WINDOW_MS = 7 * 86_400_000;
const perId = (bytes: number) => Math.round((bytes / IDS) * 10) / 10;
const gib = (bytesPerId: number) => Math.round(((bytesPerId * WINDOW_IDS) / 2 ** 30) * 10) / 10;

/** Accepts `IDS` items through `store`, 10 per call, delivering every 1,000 so the outbox stays small. */
async function acceptIds(store: OutboxStore, prefix: string): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < IDS; i += BATCH) {
    const now = Date.now();
    const items = Array.from({ length: Math.min(BATCH, IDS - i) }, () => ({
      site: site.site,
      id: newId(),
      kind: 'activity' as const,
      entry: { activity_id: 'page' },
      browser: 'b',
      visitor: 'v',
      accepted: now,
    }));
    await store.outbox.accept(items, now, OUTBOX_WINDOW_MS);
    if ((i / BATCH) % 100 === 99 || i + BATCH >= IDS) {
      const leased = await store.outbox.lease('bench', 1000, now, 60_000);
      await store.outbox.settle('bench', { delivered: leased.map((entry) => entry.seq), released: [], dead: [] }, now);
    }
    if (i > 0 && i % 200_000 === 0) console.log(`  ${prefix}: ${i.toLocaleString('en')} of ${IDS.toLocaleString('en')} ids`);
  }
  return performance.now() - started;
}

/** The state store's figures: the SQLite file at `IDS` ids, after expiry, and claim + settle throughput. */
async function stateFigures() {
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

  return {
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
}

/** The outbox's bytes per remembered id on SQLite and Redis, and what a 7-day window at 300 items/s costs. */
async function outboxFigures() {
  console.log(`Outbox: bytes per remembered id (${IDS.toLocaleString('en')} ids accepted, 10 per call, delivered as they go)`);
  const outboxDir = mkdtempSync(join(tmpdir(), 'cdp-bench-outbox-'));
  const outboxPath = join(outboxDir, 'relay-state.db');
  const sqliteOutbox = await createSqliteOutbox(outboxPath);
  await sqliteOutbox.outbox.accept([], Date.now(), OUTBOX_WINDOW_MS);
  const emptyBytes = fileBytes(outboxPath);
  const sqliteAcceptMs = await acceptIds(sqliteOutbox, 'SQLite outbox');
  await sqliteOutbox.close();
  const { default: Sqlite } = await import('libsql');
  const inspect = new Sqlite(outboxPath);
  inspect.pragma('wal_checkpoint(TRUNCATE)');
  const tableBytes = Number((inspect.prepare("SELECT sum(pgsize) FROM dbstat WHERE name IN ('outbox_seen', 'outbox_seen_until')").raw().get() as unknown[])[0]);
  inspect.close();
  const sqliteGrowth = fileBytes(outboxPath) - emptyBytes;
  const outboxSqlite = {
    seconds: Math.round(sqliteAcceptMs / 100) / 10,
    file_growth_bytes: sqliteGrowth,
    bytes_per_id: perId(sqliteGrowth),
    id_table_and_index_bytes_per_id: perId(tableBytes),
    window_7d_300_per_s_gib: gib(perId(sqliteGrowth)),
  };
  rmSync(outboxDir, { recursive: true, force: true });
  console.log(
    `  SQLite: file +${mb(sqliteGrowth)} MB = ${outboxSqlite.bytes_per_id} bytes per id (id table + index ${outboxSqlite.id_table_and_index_bytes_per_id})`,
  );

  let outboxRedis: Record<string, number> | undefined;
  try {
    const server = await startRedis();
    const store = await createRedisOutbox(server.url);
    const { Redis } = await import('ioredis');
    const raw = new Redis(server.url);
    const used = async () => {
      const info = await raw.info('memory');
      return Number(/used_memory:(\d+)/.exec(info)?.[1]);
    };
    const before = await used();
    const redisAcceptMs = await acceptIds(store, 'Redis outbox');
    const growth = (await used()) - before;
    await raw.flushall();
    // The other layouts, filled raw (16-byte ids, a 7-day expiry), so the choice is measured too.
    const layout = async (fill: (pipeline: ReturnType<typeof raw.pipeline>, id: Buffer, until: number) => void) => {
      const start = await used();
      for (let i = 0; i < IDS; i += 10_000) {
        const pipeline = raw.pipeline();
        for (let j = i; j < Math.min(IDS, i + 10_000); j++) fill(pipeline, Buffer.from(compactId(newId())), Date.now() + OUTBOX_WINDOW_MS);
        await pipeline.exec();
      }
      const bytes = (await used()) - start;
      await raw.flushall();
      return perId(bytes);
    };
    const keysWithTtl = await layout((pipeline, id, until) => pipeline.set(Buffer.concat([Buffer.from('cdp-edge:d:1:'), id]), 1, 'PXAT', until));
    const sortedSetPerDay = await layout((pipeline, id, until) => pipeline.zadd(`cdp-edge:d:1:${Math.floor(until / 86_400_000)}`, until, id));
    const hashPerDay = await layout((pipeline, id, until) => pipeline.hset(`cdp-edge:d:1:${Math.floor(until / 86_400_000)}`, id, until));
    raw.disconnect();
    await store.close();
    await server.close();
    outboxRedis = {
      seconds: Math.round(redisAcceptMs / 100) / 10,
      used_memory_growth_bytes: growth,
      bytes_per_id: perId(growth),
      window_7d_300_per_s_gib: gib(perId(growth)),
      raw_keys_with_ttl_bytes_per_id: keysWithTtl,
      raw_sorted_set_per_day_bytes_per_id: sortedSetPerDay,
      raw_hash_per_day_bytes_per_id: hashPerDay,
    };
    console.log(
      `  Redis: used_memory +${mb(growth)} MB = ${outboxRedis['bytes_per_id']} bytes per id; raw layouts: a key with TTL ${keysWithTtl}, a sorted set per day ${sortedSetPerDay}, a hash per day ${hashPerDay}`,
    );
  } catch (error) {
    console.log(`Redis outbox not measured: ${(error as Error).message}`);
  }

  return {
    ids: IDS,
    window_ids: WINDOW_IDS,
    sqlite: outboxSqlite,
    ...(outboxRedis === undefined ? {} : { redis: outboxRedis }),
  };
}

const machine = () => ({ cpus: availableParallelism(), load_average_1m: Math.round(loadavg()[0]! * 100) / 100, node: process.version });
const resultsFile = join(import.meta.dirname, 'results', 'state.json');
// --part state|outbox re-measures one part and keeps the other's figures (each part carries its own date).
const kept = PART === 'all' || !existsSync(resultsFile) ? {} : (JSON.parse(readFileSync(resultsFile, 'utf8')) as Record<string, unknown>);
const result = {
  ...kept,
  benchmark: 'state',
  ...(PART === 'outbox' ? {} : { date: new Date().toISOString(), machine: machine(), ...(await stateFigures()) }),
  ...(PART === 'state' ? {} : { outbox: { date: new Date().toISOString(), machine: machine(), ...(await outboxFigures()) } }),
};
mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
writeFileSync(resultsFile, `${JSON.stringify(result, null, 2)}\n`);
console.log('wrote bench/results/state.json');
