// The outbox on real durable stores, beyond the shared suite: several processes racing on one
// SQLite file or one redis-server, and writes that fail.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Sqlite from 'libsql';
import { describe, expect, it } from 'vitest';
import type { OutboxStore } from '../../src/relay/state/outbox.js';
import { createRedisOutbox } from '../../src/relay/state/redis-outbox.js';
import { createNodeState } from '../../src/relay/state/node.js';
import { openDriver } from '../../src/relay/state/sqlite-driver.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { redisAvailable, startRedis } from '../support/redis.js';
import { tempFiles } from '../support/temp-files.js';
import { item } from './suite/outbox-suite.js';

const root = join(import.meta.dirname, '..', '..');
const tsx = pathToFileURL(join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
/** State files in directories of their own, removed once the file ran. */
const tempFile = tempFiles('cdp-outbox-');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const hasRedis = redisAvailable('the outbox on Redis (test/relay/outbox-stores.test.ts)');

interface Raced {
  accepted: string[];
  delivered: string[];
  granted: number[];
}

/** Runs `processes` workers (test/support/outbox-worker.ts) on the same store at once. */
function race(kind: 'sqlite' | 'redis', where: string, processes: number, count: number): Promise<Raced[]> {
  const worker = join(root, 'test', 'support', 'outbox-worker.ts');
  const prefix = `race${Math.random().toString(36).slice(2)}:`;
  const children = Array.from({ length: processes }, () =>
    spawn(process.execPath, ['--import', tsx, worker, kind, where, String(count), prefix], { stdio: ['pipe', 'pipe', 'pipe'] }),
  );
  let ready = 0;
  // Every worker starts pacing at the same moment, once all have accepted and drained.
  const startAll = () => {
    const start = String(Date.now() + 300);
    for (const child of children) child.stdin.end(`${start}\n`);
  };
  return Promise.all(
    children.map(
      (child) =>
        new Promise<Raced>((resolve, reject) => {
          let out = '';
          let err = '';
          let waiting = true;
          child.stdout.on('data', (chunk) => {
            out += chunk;
            if (waiting && out.startsWith('ready\n')) {
              waiting = false;
              out = out.slice('ready\n'.length);
              if (++ready === processes) startAll();
            }
          });
          child.stderr.on('data', (chunk) => (err += chunk));
          child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Raced) : reject(new Error(`outbox worker exited ${code}: ${err}`))));
        }),
    ),
  );
}

function expectOnce(results: Raced[], count: number) {
  const accepted = results.flatMap((result) => result.accepted);
  const delivered = results.flatMap((result) => result.delivered);
  expect(accepted).toHaveLength(count);
  expect(new Set(accepted).size).toBe(count);
  expect(delivered).toHaveLength(count);
  expect(new Set(delivered).size).toBe(count);
  // 20 calls a second shared by all: in one second, at most 21 (both ends), spaced 50 ms. (At
  // least half of them: on a loaded machine the workers' timers wake late, never early.)
  const granted = results.flatMap((result) => result.granted).sort((a, b) => a - b);
  expect(granted.length).toBeGreaterThanOrEqual(10);
  expect(granted.length).toBeLessThanOrEqual(21);
  for (let i = 1; i < granted.length; i++) expect(granted[i]! - granted[i - 1]!).toBeGreaterThanOrEqual(49);
  expect(results.filter((result) => result.granted.length > 0).length).toBeGreaterThan(1);
}

describe('processes sharing one store', () => {
  it('three processes on one SQLite file: each id accepted once, delivered once, and one pace for all', async () => {
    expectOnce(await race('sqlite', tempFile(), 3, 300), 300);
  }, 60_000);

  it.runIf(hasRedis)(
    'three processes on one redis-server: each id accepted once, delivered once, and one pace for all',
    async () => {
      const redis = await startRedis();
      try {
        expectOnce(await race('redis', redis.url, 3, 300), 300);
      } finally {
        await redis.close();
      }
    },
    60_000,
  );
});

/**
 * SIGKILLs a worker that accepts and leases in a loop, once it has printed `steps` lines; then a
 * new connection finds every id the worker was answered `accepted` for, once, and the entries it
 * had leased with their send counted.
 */
async function killMidway(kind: 'sqlite' | 'redis', where: string, prefix: string, open: () => Promise<OutboxStore>) {
  const worker = join(root, 'test', 'support', 'outbox-worker.ts');
  const child = spawn(process.execPath, ['--import', tsx, worker, kind, where, 'until-killed', prefix], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk) => (err += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.split('\n').length > 60) resolve();
    });
    void exited.then(() => reject(new Error(`worker exited before it was killed: ${err}`)));
  });
  child.kill('SIGKILL');
  await exited;
  const lines = out.split('\n').slice(0, -1); // the last line may be cut short
  const ids = (tag: string) => lines.filter((line) => line.startsWith(`${tag} `)).flatMap((line) => line.slice(2).split(' ').filter(Boolean));
  const answered = ids('a');
  const leasedBefore = new Set(ids('l'));
  const store = await open();
  try {
    const entries = await store.outbox.lease('after', 100_000, Date.now() + 120_000, 60_000);
    const stored = entries.map((entry) => entry.id);
    expect(new Set(stored).size).toBe(stored.length);
    // Nothing answered accepted is lost; at most the one accept in flight went in unanswered.
    for (const id of answered) expect(stored).toContain(id);
    expect(stored.length - answered.length).toBeGreaterThanOrEqual(0);
    expect(stored.length - answered.length).toBeLessThanOrEqual(10);
    // A call that was marked sending counted its send; at most the one in flight did so unanswered.
    for (const entry of entries) if (leasedBefore.has(entry.id)) expect(entry.attempts).toBe(1);
    expect(entries.filter((entry) => entry.attempts === 1 && !leasedBefore.has(entry.id)).length).toBeLessThanOrEqual(5);
    expect(entries.every((entry) => entry.attempts <= 1)).toBe(true);
    expect((await store.outbox.stats()).remembered).toBe(stored.length);
  } finally {
    await store.close();
  }
}

describe('a process killed mid-way', () => {
  it('SQLite: every item answered accepted is in the file, once; its leases come back with the send counted', async () => {
    const path = tempFile();
    await killMidway('sqlite', path, '', () => createSqliteOutbox(path));
  }, 60_000);

  it.runIf(hasRedis)(
    'Redis: every item answered accepted is in the server, once; its leases come back with the send counted',
    async () => {
      const redis = await startRedis();
      try {
        // (the check leases 2 minutes ahead, past the worker's leases: it takes that time, not Redis's)
        await killMidway('redis', redis.url, 'killed:', () => createRedisOutbox(redis.url, { prefix: 'killed:', callerTime: true }));
      } finally {
        await redis.close();
      }
    },
    60_000,
  );
});

describe('a write that fails', () => {
  it('SQLite: rejects with its cause and writes nothing; the next call works', async () => {
    const path = tempFile();
    const store = await createSqliteOutbox(path, { busyTimeoutMs: 50 });
    const now = Date.now();
    await store.outbox.accept([item('s', 'first')], now, 60_000);
    // Another connection holds the write lock past the busy timeout (through the same driver: two copies of SQLite in
    // one process do not see each other's locks).
    const other = await openDriver(path, 'the test');
    other.exec('BEGIN IMMEDIATE');
    await expect(store.outbox.accept([item('s', 'a'), item('s', 'b')], now, 60_000)).rejects.toMatchObject({
      message: expect.stringMatching(/database is locked/),
    });
    other.exec('COMMIT');
    other.close();
    expect(await store.outbox.accept([item('s', 'a'), item('s', 'b'), item('s', 'first')], now, 60_000)).toEqual({
      accepted: ['a', 'b'],
      duplicate: ['first'],
      full: [],
    });
    expect(await store.outbox.stats()).toMatchObject({ pending: 3, remembered: 3 });
    await store.close();
  });

  it('SQLite: a call that fails midway leaves nothing behind, not even the site it named first', async () => {
    const path = tempFile();
    const [one, two] = [await createSqliteOutbox(path), await createSqliteOutbox(path)];
    try {
      const now = Date.now();
      // An entry JSON cannot hold: the accept fails after it numbered the new site 'x'.
      await expect(one.outbox.accept([item('x', 'a', { entry: { n: 1n } })], now, 60_000)).rejects.toThrow(/BigInt/);
      // Another process numbers its own new site; sites must still never share ids.
      expect((await two.outbox.accept([item('y', 'shared')], now, 60_000)).accepted).toEqual(['shared']);
      expect(await one.outbox.accept([item('x', 'shared'), item('x', 'a')], now, 60_000)).toEqual({ accepted: ['shared', 'a'], duplicate: [], full: [] });
      expect(await one.outbox.stats()).toMatchObject({ pending: 3, remembered: 3 });
    } finally {
      await one.close();
      await two.close();
    }
  });

  it.runIf(hasRedis)(
    'Redis: rejects at once while the server is away; the next call once it is back works',
    async () => {
      const own = await startRedis();
      const store = await createRedisOutbox(own.url, { commandTimeoutMs: 500 });
      try {
        expect((await store.outbox.accept([item('s', 'before')], Date.now(), 60_000)).accepted).toEqual(['before']);
        await own.stop({ kill: true });
        const started = Date.now();
        await expect(store.outbox.accept([item('s', 'during')], Date.now(), 60_000)).rejects.toThrow();
        await expect(store.pacer(10).take(Date.now(), 'deliver')).rejects.toThrow();
        expect(Date.now() - started).toBeLessThan(3000);
        await own.restart();
        let answer: unknown;
        for (let i = 0; i < 100 && answer === undefined; i++) {
          answer = await store.outbox.accept([item('s', 'after')], Date.now(), 60_000).catch(() => undefined);
          if (answer === undefined) await sleep(50);
        }
        expect(answer).toEqual({ accepted: ['after'], duplicate: [], full: [] });
      } finally {
        await store.close();
        await own.close();
      }
    },
    30_000,
  );
});

describe('the SQLite outbox counts its remembered ids as they come and go', () => {
  it('keeps the count through accepts, expiry and a reopen, and counts a file that had none once', async () => {
    const path = tempFile();
    const store = await createSqliteOutbox(path);
    const now = Date.now();
    await store.outbox.accept([item('s', 'a'), item('s', 'b'), item('s', 'a')], now, 1000);
    expect((await store.outbox.stats()).remembered).toBe(2);
    // a's and b's windows passed: b forgotten, a remembered anew, c new.
    expect(await store.outbox.accept([item('s', 'a'), item('s', 'c')], now + 1000, 1000)).toEqual({ accepted: ['a', 'c'], duplicate: [], full: [] });
    expect((await store.outbox.stats()).remembered).toBe(2);
    await store.outbox.accept([], now + 5000, 1000); // the expiry slice forgets both
    expect((await store.outbox.stats()).remembered).toBe(0);
    // More expired ids than one accept's expiry slice (the oldest 1,000, with any ending in the same ms
    // as the 1,000th): those left are forgotten when sent again. Here 1,000 end at one ms, 5 a ms later.
    const many = Array.from({ length: 1005 }, (_, i) => item('m', `m${i}`));
    expect((await store.outbox.accept(many, now, 1000)).accepted).toHaveLength(1005);
    expect((await store.outbox.accept(many.slice(0, 1000), now + 2000, 1000)).accepted).toHaveLength(1000);
    expect((await store.outbox.accept(many.slice(1000), now + 2001, 1000)).accepted).toHaveLength(5);
    expect((await store.outbox.stats()).remembered).toBe(1005);
    await store.outbox.accept([item('s', 'd'), item('s', 'e')], now + 5000, 60_000);
    expect((await store.outbox.stats()).remembered).toBe(1005 + 2 - 1000);
    await store.close();
    const db = new Sqlite(path);
    db.exec('DROP TABLE outbox_count');
    db.close();
    const reopened = await createSqliteOutbox(path);
    expect((await reopened.outbox.stats()).remembered).toBe(7);
    await reopened.close();
  });
});

describe('createNodeState opens the outbox on the relay’s backend', () => {
  it('SQLite: accepted items and the pacer live in the state file, shared by a second opening and kept across a reopen', async () => {
    const stateFile = tempFile();
    const first = await createNodeState({ stateFile, platformRate: 5 });
    const second = await createNodeState({ stateFile, platformRate: 5 });
    const now = Date.now();
    expect((await first.outbox.accept([item('s', 'kept')], now, 60_000)).accepted).toEqual(['kept']);
    expect((await second.outbox.accept([item('s', 'kept')], now, 60_000)).duplicate).toEqual(['kept']);
    // A proxy call takes the slot from now (a deliver grant may catch up on a schedule it is behind).
    expect(await first.pacer.take(now, 'proxy')).toBe(0);
    expect(await second.pacer.take(now, 'deliver')).toBe(200);
    await first.close();
    await second.close();
    const reopened = await createNodeState({ stateFile });
    expect((await reopened.outbox.lease('d', 10, now, 1000)).map((entry) => entry.id)).toEqual(['kept']);
    // The default budget is 10 calls a second.
    expect(await reopened.pacer.take(now + 10_000, 'proxy')).toBe(0);
    expect(await reopened.pacer.take(now + 10_000, 'deliver')).toBe(100);
    await reopened.close();
  });

  it.runIf(hasRedis)('Redis: the outbox is the server’s, shared by every relay that names it', async () => {
    const redis = await startRedis();
    try {
      const [one, two] = [await createNodeState({ redisUrl: redis.url }), await createNodeState({ redisUrl: redis.url })];
      await one.outbox.accept([item('s', 'x')], Date.now(), 60_000);
      expect(await two.outbox.stats()).toMatchObject({ pending: 1, remembered: 1 });
      await one.close();
      await two.close();
    } finally {
      await redis.close();
    }
  });
});
