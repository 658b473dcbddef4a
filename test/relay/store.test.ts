// One conformance suite for every state store a relay can keep: memory, an SQLite file and a real
// redis-server. Leases, marks, expiry, sites kept apart, capped counters, and atomic claims when
// several processes share the file or the server.
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/relay/state/memory.js';
import { createRedisState } from '../../src/relay/state/redis.js';
import { createSqliteStore } from '../../src/relay/state/sqlite.js';
import { lookupCounter, type RelayStore } from '../../src/relay/state/store.js';
import { compactId, compactIdHex, compactIdString } from '../../src/relay/state/ids.js';
import { countAllocations } from '../../bench/lib/gc-count.js';
import { toHex } from '../../src/relay/core/encoding.js';
import { type RunningRedis, redisAvailable, startRedis, TEST_COMMAND_TIMEOUT_MS } from '../support/redis.js';

const root = join(import.meta.dirname, '..', '..');
const tsx = pathToFileURL(join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const tempDir = () => mkdtempSync(join(tmpdir(), 'cdp-store-'));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const site = (name: string) => ({ site: name });

let redis: RunningRedis | undefined;
const hasRedis = redisAvailable('relay state stores on Redis (test/relay/store.test.ts)');
beforeAll(async () => {
  if (hasRedis) redis = await startRedis();
});
afterAll(async () => {
  await redis?.close();
});

interface Kind {
  name: string;
  open(): Promise<RelayStore>;
}
const kinds: Kind[] = [
  { name: 'memory', open: async () => createMemoryStore() },
  { name: 'SQLite', open: () => createSqliteStore(join(tempDir(), 'state.db')) },
  ...(hasRedis
    ? [
        {
          name: 'Redis',
          open: async () => (await createRedisState(redis!.url, { prefix: `t${Math.random()}:`, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS })).store,
        },
      ]
    : []),
];

describe.each(kinds)('$name store', ({ open }) => {
  it('leases fresh ids, reports forwarded ones as duplicates and leased ones as busy', async () => {
    const store = await open();
    const now = Date.now();
    expect(await store.claim(site('s'), ['a', 'b'], now, 60_000)).toEqual({ fresh: ['a', 'b'], duplicate: [], busy: [] });
    expect(await store.claim(site('s'), ['a', 'c'], now, 60_000)).toEqual({ fresh: ['c'], duplicate: [], busy: ['a'] });
    await store.settle(site('s'), { forwarded: ['a'], until: now + 60_000, released: ['b'] });
    expect(await store.claim(site('s'), ['a', 'b'], now + 10, 60_000)).toEqual({ fresh: ['b'], duplicate: ['a'], busy: [] });
    // Releasing never unmarks a forwarded id.
    await store.settle(site('s'), { forwarded: [], until: 0, released: ['a'] });
    expect((await store.claim(site('s'), ['a'], now + 20, 60_000)).duplicate).toEqual(['a']);
    // Sites never mix.
    expect((await store.claim(site('other'), ['a'], now, 60_000)).fresh).toEqual(['a']);
    await store.close();
  });

  it('forgets an abandoned lease and an expired mark, so the item can go again', async () => {
    const store = await open();
    const now = Date.now();
    await store.claim(site('s'), ['crashed'], now, 150);
    await store.claim(site('s'), ['done'], now, 60_000);
    await store.settle(site('s'), { forwarded: ['done'], until: now + 150, released: [] });
    await sleep(250);
    expect(await store.claim(site('s'), ['crashed', 'done'], Date.now(), 60_000)).toEqual({ fresh: ['crashed', 'done'], duplicate: [], busy: [] });
    await store.close();
  });

  it('adds to a counter without passing its limit, exactly', async () => {
    const store = await open();
    const name = lookupCounter(Date.UTC(2026, 10, 23));
    expect(name).toBe('address-lookup:2026-11');
    expect(await store.add('s', name, 2, 3)).toBe(2);
    expect(await store.add('s', name, 2, 3)).toBe(1);
    expect(await store.add('s', name, 2, 3)).toBe(0);
    expect(await store.add('s', lookupCounter(Date.UTC(2026, 11, 1)), 2, 3)).toBe(2);
    expect(await store.add('s', 'unlimited', 5, Number.POSITIVE_INFINITY)).toBe(5);
    // Concurrent adds never pass the limit together.
    const added = await Promise.all(Array.from({ length: 20 }, () => store.add('t', name, 1, 7)));
    expect(added.reduce((sum, n) => sum + n, 0)).toBe(7);
    await store.close();
  });

  it('answers ping while it is reachable', async () => {
    const store = await open();
    await expect(store.ping()).resolves.toBeUndefined();
    await store.close();
  });
});

/** Runs `processes` claimers of the same ids at once; every id must be fresh for exactly one of them. */
async function race(kind: 'sqlite' | 'redis', where: string, processes: number, count: number): Promise<string[][]> {
  const worker = join(root, 'test', 'support', 'claim-worker.ts');
  return Promise.all(
    Array.from(
      { length: processes },
      () =>
        new Promise<string[]>((resolve, reject) => {
          const child = spawn(process.execPath, ['--import', tsx, worker, kind, where, String(count)], { stdio: ['ignore', 'pipe', 'pipe'] });
          let out = '';
          let err = '';
          child.stdout.on('data', (chunk) => (out += chunk));
          child.stderr.on('data', (chunk) => (err += chunk));
          child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as string[]) : reject(new Error(`claim worker exited ${code}: ${err}`))));
        }),
    ),
  );
}

describe('claims are atomic across processes', () => {
  it('four processes on one SQLite file lease each id exactly once', async () => {
    const results = await race('sqlite', join(tempDir(), 'shared.db'), 4, 300);
    const all = results.flat();
    expect(all).toHaveLength(300);
    expect(new Set(all).size).toBe(300);
  }, 60_000);

  it.runIf(hasRedis)(
    'four processes on one redis-server lease each id exactly once',
    async () => {
      const results = await race('redis', redis!.url, 4, 300);
      const all = results.flat();
      expect(all).toHaveLength(300);
      expect(new Set(all).size).toBe(300);
    },
    60_000,
  );
});

describe('SQLite state file', () => {
  it('keeps forwarded ids and counters across a reopen, and deletes expired rows as it goes', async () => {
    const file = join(tempDir(), 'state.db');
    const first = await createSqliteStore(file);
    const now = Date.now();
    await first.claim(site('s'), ['kept', 'old'], now, 60_000);
    await first.settle(site('s'), { forwarded: ['kept'], until: now + 3600_000, released: [] });
    await first.settle(site('s'), { forwarded: ['old'], until: now + 50, released: [] });
    await first.add('s', 'address-lookup:2026-11', 4, 10);
    await first.close();
    await sleep(100);

    const second = await createSqliteStore(file);
    expect(await second.stats()).toEqual({ remembered: 1, leased: 0 });
    expect(await second.claim(site('s'), ['kept', 'old', 'new'], Date.now(), 60_000)).toEqual({ fresh: ['old', 'new'], duplicate: ['kept'], busy: [] });
    expect(await second.add('s', 'address-lookup:2026-11', 10, 10)).toBe(6);
    expect(statSync(file).size).toBeGreaterThan(0);
    await second.close();
  });
});

describe('SQLite group commit: calls made together share one transaction', () => {
  it('answers each call with its own result, in the order made, as if each had its own transaction', async () => {
    const store = await createSqliteStore(join(tempDir(), 'state.db'));
    const now = Date.now();
    // 40 calls in one turn; call k asks for ids k and k+1, so every id but the first is wanted twice.
    const claims = await Promise.all(Array.from({ length: 40 }, (_, k) => store.claim(site('s'), [`id${k}`, `id${k + 1}`], now, 60_000)));
    expect(claims[0]).toEqual({ fresh: ['id0', 'id1'], duplicate: [], busy: [] });
    for (let k = 1; k < 40; k++) expect(claims[k]).toEqual({ fresh: [`id${k + 1}`], duplicate: [], busy: [`id${k}`] });
    // A settle and a claim made together: the claim sees the settle made before it.
    const [, after] = await Promise.all([
      store.settle(site('s'), { forwarded: ['id0'], until: now + 60_000, released: ['id1'] }),
      store.claim(site('s'), ['id0', 'id1'], now, 60_000),
    ]);
    expect(after).toEqual({ fresh: ['id1'], duplicate: ['id0'], busy: [] });
    await store.close();
  });

  it('a call that cannot be written fails alone, with its cause; the others of its group and later calls go through', async () => {
    const store = await createSqliteStore(join(tempDir(), 'state.db'));
    const now = Date.now();
    const [before, broken, beside] = await Promise.allSettled([
      store.claim(site('s'), ['a'], now, 60_000),
      // `until` must be a number: SQLite refuses the row (NOT NULL), so this settle cannot be written.
      store.settle(site('s'), { forwarded: ['a'], until: Number.NaN, released: [] }),
      store.claim(site('s'), ['b'], now, 60_000),
    ]);
    expect(before).toEqual({ status: 'fulfilled', value: { fresh: ['a'], duplicate: [], busy: [] } });
    expect(beside).toEqual({ status: 'fulfilled', value: { fresh: ['b'], duplicate: [], busy: [] } });
    expect(broken.status).toBe('rejected');
    expect(String((broken as PromiseRejectedResult).reason.message)).toMatch(/NOT NULL constraint failed/);
    // Nothing of the failed call was written ('a' is still only leased), and the store goes on.
    expect(await store.claim(site('s'), ['a', 'c'], now, 60_000)).toEqual({ fresh: ['c'], duplicate: [], busy: ['a'] });
    await store.close();
  });
});

describe.runIf(hasRedis)('Redis state when the server goes away', () => {
  it('fails calls at once while Redis is down, and works again once it is back', async () => {
    const own = await startRedis();
    const { store, limiter } = await createRedisState(own.url, { commandTimeoutMs: 500 });
    expect((await store.claim(site('s'), ['before'], Date.now(), 60_000)).fresh).toEqual(['before']);
    await own.stop({ kill: true });
    const started = Date.now();
    await expect(store.claim(site('s'), ['during'], Date.now(), 60_000)).rejects.toThrow();
    await expect(store.ping()).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(3000);
    await own.restart();
    let back = false;
    for (let i = 0; i < 100 && !back; i++) {
      back = await store.ping().then(
        () => true,
        () => false,
      );
      if (!back) await sleep(50);
    }
    expect(back).toBe(true);
    expect((await store.claim(site('s'), ['after'], Date.now(), 60_000)).fresh).toEqual(['after']);
    expect((await limiter.limit('visitor:s:1.2.3.4', { perSecond: 1, burst: 1 }, Date.now())).ok).toBe(true);
    await store.close();
    await own.close();
  }, 30_000);
});

describe('ids are remembered by 16 bytes', () => {
  it('a UUID by its own bytes, in any case, with or without dashes; any other id by its SHA-256', () => {
    const bytes = '0192d4a87f3e7c4b9a1e3f5b6cad8e9f';
    for (const id of ['0192d4a8-7f3e-7c4b-9a1e-3f5b6cad8e9f', '0192D4A8-7F3E-7C4B-9A1E-3F5B6CAD8E9F', '0192d4a87f3e7c4b9a1e3f5b6cAD8E9F']) {
      expect(toHex(compactId(id))).toBe(bytes);
      // As the SQL outbox hands it to SQLite (what hex() answers), without the bytes.
      expect(compactIdHex(id)).toBe(bytes.toUpperCase());
      // As the memory and Redis outboxes key it: one character a byte.
      expect(Buffer.from(compactIdString(id), 'latin1').toString('hex')).toBe(bytes);
    }
    expect(Buffer.from(compactIdString('item-1'), 'latin1').toString('hex')).toBe(toHex(compactId('item-1')));
    // One id after another (the codes are made in one shared list): each its own.
    expect([compactIdString('item-1'), compactIdString(bytes), compactIdString('item-1')].map((key) => Buffer.from(key, 'latin1').toString('hex'))).toEqual([
      toHex(compactId('item-1')),
      bytes,
      toHex(compactId('item-1')),
    ]);
    expect(toHex(compactId('item-1'))).toBe(createHash('sha256').update('item-1').digest('hex').slice(0, 32));
    expect(compactIdHex('item-1')).toBe(toHex(compactId('item-1')).toUpperCase());
    // Dashes anywhere the UUID pattern allows them, none or some.
    expect(compactIdHex('0192d4a8-7f3e7c4b-9a1e3f5b6cad8e9f')).toBe(bytes.toUpperCase());
    expect(toHex(Uint8Array.from({ length: 256 }, (_, byte) => byte))).toBe(Buffer.from(Array.from({ length: 256 }, (_, byte) => byte)).toString('hex'));
  });

  it('takes for a UUID exactly what the UUID pattern matches: near misses of every kind are hashed', () => {
    const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
    const hashed = (id: string) => createHash('sha256').update(id).digest('hex').slice(0, 32);
    // Characters at the edges of each range, dashes, and what case folding might bring in.
    const alphabet = ['0', '9', 'a', 'f', 'A', 'F', '/', ':', '@', 'G', '`', 'g', '-', '-', ' ', '\n', 'é', 'Ａ', '\u0000'];
    let seed = 11;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed % n;
    };
    let uuids = 0;
    let wrong = 0;
    for (let i = 0; i < 20_000; i++) {
      // A UUID in some spelling, then a few characters changed, added or taken away.
      let id: string = randomUUID();
      if (random(2) === 0) id = id.toUpperCase();
      for (let dash = random(5); dash > 0; dash--) id = id.replace('-', '');
      for (let edits = random(3); edits > 0; edits--) {
        const at = random(id.length + 1);
        const char = alphabet[random(alphabet.length)]!;
        const kind = random(3);
        id = kind === 0 ? id.slice(0, at) + char + id.slice(at + 1) : kind === 1 ? id.slice(0, at) + char + id.slice(at) : id.slice(0, at) + id.slice(at + 1);
      }
      const uuid = UUID.test(id);
      if (uuid) uuids++;
      const expected = uuid ? id.replaceAll('-', '').toLowerCase() : hashed(id);
      if (toHex(compactId(id)) !== expected || compactIdHex(id) !== expected.toUpperCase()) wrong++;
      if (Buffer.from(compactIdString(id), 'latin1').toString('hex') !== expected) wrong++;
    }
    expect(wrong).toBe(0);
    // Both kinds were met often.
    expect(uuids).toBeGreaterThan(5_000);
    expect(uuids).toBeLessThan(15_000);
  });

  it("a UUID is keyed (the memory and Redis outboxes, every item accepted) with no more allocated than its key's own string", () => {
    const ids = Array.from({ length: 1000 }, () => randomUUID());
    let chars = 0;
    const run = () => {
      for (let round = 0; round < 20; round++) for (const id of ids) chars += compactIdString(id).length;
    };
    run(); // optimised first, as a relay's hot code is
    const counted = countAllocations();
    run();
    const { bytes } = counted();
    expect(chars).toBe(2 * 20 * 1000 * 16);
    // A 16-character string is 32 bytes on V8's heap (35 a call counted); a byte array and the spread of its iterator made 1,155.
    expect(bytes / 20_000).toBeLessThan(100);
  });
});
