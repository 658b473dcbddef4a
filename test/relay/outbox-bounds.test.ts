// What one outbox call costs, whatever the backlog: on a real SQLite file no statement of a stats
// read or a lease scans a table (each plan only searches an index, or walks one under a LIMIT);
// a lease reads the first entries of all its lanes together, and among many ready visitors only the lanes it takes from; on a real redis-server a dead-letter page runs a bounded number of commands, however many dead
// letters there are. And a state file of the release before lanes is leased from, counts and all; a delivered entry's
// row is written once and deleted once.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import Sqlite from 'libsql';
import { describe, expect, it } from 'vitest';
import { parts, planCalls } from '../../src/relay/deliver/batch.js';
import type { OutboxItem } from '../../src/relay/state/outbox.js';
import { createSqlOutbox, type SqlPort } from '../../src/relay/state/sql-outbox.js';
import { createRedisOutbox } from '../../src/relay/state/redis-outbox.js';
import { fromLibsql } from '../../src/relay/state/sqlite-driver.js';
import { createSqliteOutbox, sqlitePort } from '../../src/relay/state/sqlite-outbox.js';
import { redisAvailable, startRedis, TEST_COMMAND_TIMEOUT_MS } from '../support/redis.js';
import { countingRows } from '../support/sql-rows.js';
import { item } from './suite/outbox-suite.js';

const tempFile = () => join(mkdtempSync(join(tmpdir(), 'cdp-bounds-')), 'state.db');
const hasRedis = redisAvailable('the Redis outbox bounds (test/relay/outbox-bounds.test.ts)');

/** A port that records every statement it runs while `recording` is on. */
function recorded(db: Sqlite.Database) {
  const port = sqlitePort(fromLibsql(db));
  const statements: string[] = [];
  let recording = false;
  const wrapped: SqlPort = {
    ...port,
    query: (sql, ...params) => {
      if (recording) statements.push(sql);
      return port.query(sql, ...params);
    },
    run: (sql, ...params) => {
      if (recording) statements.push(sql);
      return port.run(sql, ...params);
    },
  };
  return {
    port: wrapped,
    async during(run: () => Promise<unknown>) {
      statements.length = 0;
      recording = true;
      try {
        await run();
      } finally {
        recording = false;
      }
      return [...statements];
    },
  };
}

/** The full-table scans in `sql`'s plan (a walk of an index is not one). */
/** Counts every write of `tables` by triggers: what each table had written, by event (table, event, count, in order). */
function countWrites(db: Sqlite.Database, tables: readonly string[]) {
  db.exec('CREATE TEMP TABLE writes (name TEXT, event TEXT)');
  for (const table of tables)
    for (const event of ['INSERT', 'UPDATE', 'DELETE'])
      db.exec(`CREATE TEMP TRIGGER ${table}_${event} AFTER ${event} ON main.${table} BEGIN INSERT INTO writes VALUES ('${table}', '${event}'); END;`);
  return {
    counts: () => db.prepare('SELECT name, event, count(*) FROM writes GROUP BY name, event ORDER BY name, event').raw().all(),
    forget: () => void db.exec('DELETE FROM writes'),
  };
}

function scans(db: Sqlite.Database, sql: string): string[] {
  const params = Array.from({ length: Math.max(0, ...[...sql.matchAll(/\?(\d+)/g)].map((match) => Number(match[1]))) }, () => '[]');
  const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[];
  return plan.map((row) => row.detail).filter((detail) => /^SCAN /.test(detail) && !/USING (COVERING )?INDEX|json_each/.test(detail));
}

describe('SQLite: a stats read and a lease cost the same whatever the backlog', () => {
  it('runs no statement that scans a table, with 20,000 entries waiting and 2,000 dead', async () => {
    const path = tempFile();
    const db = new Sqlite(path);
    db.pragma('journal_mode = WAL');
    const { port, during } = recorded(db);
    const { outbox } = await createSqlOutbox(port);
    const now = Date.now();
    for (let b = 0; b < 220; b++) {
      await outbox.accept(
        Array.from({ length: 100 }, (_, i) => item(`s${b % 7}`, `b${b}-${i}`, { visitor: `v${b % 50}` })),
        now,
        3600_000,
      );
    }
    const doomed = await outbox.lease('me', 2000, now, 60_000);
    await outbox.settle('me', { delivered: [], released: [], dead: doomed.map((entry) => ({ seq: entry.seq, reason: 'x' })) }, now);
    const statsSql = await during(() => outbox.stats());
    expect(await outbox.stats()).toMatchObject({ pending: 20_000, dead: 2000 });
    const leaseSql = await during(() => outbox.lease('me', 1000, now + 1, 60_000));
    for (const sql of [...new Set([...statsSql, ...leaseSql])]) expect([sql, scans(db, sql)]).toEqual([sql, []]);
    db.close();
  }, 60_000);

  it('leases from a state file of the release before lanes: its entries, fairly, with their counts', async () => {
    const path = tempFile();
    const old = new Sqlite(path);
    // The outbox tables as that release wrote them: no lanes, no counts of entries.
    old.exec(`
      CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, item TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, owner TEXT, available INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE outbox_dead (seq INTEGER PRIMARY KEY, site TEXT NOT NULL, item TEXT NOT NULL, reason TEXT NOT NULL, status INTEGER, failed INTEGER NOT NULL);
      CREATE TABLE outbox_count (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
      INSERT INTO outbox_count VALUES ('remembered', 0);
    `);
    const add = old.prepare('INSERT INTO outbox (item) VALUES (?)');
    for (let i = 0; i < 12; i++) add.run(JSON.stringify(item('s', `loud${i}`, { visitor: 'loud' })));
    add.run(JSON.stringify(item('s', 'quiet', { visitor: 'quiet' })));
    old.prepare('INSERT INTO outbox_dead VALUES (100, ?, ?, ?, NULL, ?)').run('s', JSON.stringify(item('s', 'gone')), 'refused', Date.now());
    old.close();
    const store = await createSqliteOutbox(path);
    try {
      expect(await store.outbox.stats()).toMatchObject({ pending: 13, dead: 1 });
      // A turn is a run of up to 10 of a visitor's entries: loud's first ten, then quiet's.
      const leased = await store.outbox.lease('me', 11, Date.now(), 1000);
      expect(leased.map((entry) => entry.id)).toEqual([...Array.from({ length: 10 }, (_, i) => `loud${i}`), 'quiet']);
      await store.outbox.settle('me', { delivered: leased.map((entry) => entry.seq), released: [], dead: [] }, Date.now());
      expect((await store.outbox.lease('me', 10, Date.now(), 1000)).map((entry) => entry.id)).toEqual(['loud10', 'loud11']);
      expect(await store.outbox.stats()).toMatchObject({ pending: 2, dead: 1 });
    } finally {
      await store.close();
    }
  });
});

describe.runIf(hasRedis)('Redis: every script touches a bounded number of keys', () => {
  it('lists 10 of 1,000 dead letters with a few dozen commands, and retries them all in pages', async () => {
    const redis = await startRedis();
    // A client that waits 10 s for a command, not the relay's 2 s, which this test does not test:
    // MONITOR makes the server stream every command of the scripts to it as they run.
    const store = await createRedisOutbox(redis.url, { prefix: 'bounds:', commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS });
    // `monitor()` opens a connection of its own: `base` only lends it its options and never connects
    // itself. Connected, its ready check (an INFO) can reach the server just after MONITOR and come
    // back in the same read as MONITOR's OK, before ioredis has switched the connection to monitoring,
    // and ioredis then fails it as a reply to no command ("Command queue state error"). Both are
    // closed at the end (a client left open reconnects to the stopped server while the worker runs).
    const base = new Redis(redis.url, { lazyConnect: true });
    const monitor = await base.monitor();
    try {
      const now = Date.now();
      for (let b = 0; b < 10; b++) {
        await store.outbox.accept(
          Array.from({ length: 100 }, (_, i) => item('s', `d${b}-${i}`)),
          now,
          3600_000,
        );
      }
      const leased = await store.outbox.lease('me', 1000, now, 60_000);
      await store.outbox.settle('me', { delivered: [], released: [], dead: leased.map((entry) => ({ seq: entry.seq, reason: 'x' })) }, now);
      // Counts what the scripts run between two ECHOs: MONITOR reports commands in the order the
      // server ran them (a script's own commands included), whenever it gets to them.
      const marker = new Redis(redis.url);
      let counting = false;
      let ended = false;
      let commands = 0;
      monitor.on('monitor', (_time: string, args: string[], source: string) => {
        if (args[0]?.toLowerCase() === 'echo') {
          counting = args[1] === 'start';
          ended ||= args[1] === 'end';
        } else if (counting && source.includes('lua')) commands++;
      });
      await marker.echo('start');
      const letters = await store.outbox.deadLetters({ limit: 10 });
      await marker.echo('end');
      marker.disconnect();
      expect(letters).toHaveLength(10);
      await expect.poll(() => ended, { timeout: 60_000 }).toBe(true);
      expect(commands).toBeLessThan(50);
      expect((await store.outbox.deadLetters()).length).toBe(1000);
      expect(await store.outbox.retryDead(undefined, now)).toBe(1000);
      expect(await store.outbox.stats()).toMatchObject({ pending: 1000, dead: 0 });
    } finally {
      monitor.disconnect();
      base.disconnect();
      await store.close();
      await redis.close();
    }
  }, 120_000);
});

describe('SQLite: a lease among many ready visitors reads the lanes it takes from, and their first entries with them', () => {
  it('leases 1,000 of 2,000 visitors of one entry each in about 4 rows an entry', async () => {
    const db = new Sqlite(tempFile());
    db.pragma('journal_mode = WAL');
    const counted = countingRows(sqlitePort(fromLibsql(db)));
    const { outbox } = await createSqlOutbox(counted.port);
    const now = Date.now();
    await outbox.accept(
      Array.from({ length: 2000 }, (_, i) => item('s', `e${i}`)),
      now,
      3600_000,
    );
    const before = counted.rows();
    const leased = await outbox.lease('me', 1000, now, 60_000);
    const rows = counted.rows() - before;
    expect(new Set(leased.map((entry) => entry.visitor)).size).toBe(1000);
    // Each entry: its lane (with its first entry in the lane's row), its removal from the ready, its lane's count, its item.
    // Before, 2,000 lanes and 2,000 first entries were read (7,012 rows); with pages of lanes and their entries apart, 5,012.
    expect(rows).toBeLessThanOrEqual(4 * 1000 + 20);
    db.close();
  });
});

describe('SQLite: a settle reads none of its entries back', () => {
  it('settles 1,000 entries of as many visitors answering a row per row of its lease and per site, none per entry or lane', async () => {
    const db = new Sqlite(tempFile());
    db.pragma('journal_mode = WAL');
    let answered = 0;
    const port = sqlitePort(fromLibsql(db));
    const { outbox } = await createSqlOutbox({
      ...port,
      query: (sql, ...params) => {
        const rows = port.query(sql, ...params);
        answered += rows.length;
        return rows;
      },
    });
    const now = Date.now();
    await outbox.accept(
      Array.from({ length: 1000 }, (_, i) => item(i % 2 === 0 ? 's' : 't', `e${i}`, { visitor: `v${i}` })),
      now,
      3600_000,
    );
    const leased = await outbox.lease('me', 1000, now, 60_000);
    answered = 0;
    expect(await outbox.settle('me', { delivered: leased.map(({ seq }) => seq), released: [], dead: [] }, now)).toEqual({ skipped: 0 });
    // The lease's 10 rows (its entries with their lanes and sites) and its 2 sites' counts: before, its delete answered
    // each entry's lane (1,000 rows more), and each site's count was read through its lanes.
    expect(answered).toBe(10 + 2);
    expect(await outbox.stats()).toMatchObject({ pending: 0 });
    db.close();
  });
});

describe('SQLite: a lease among many new visitors, each an identify first, reads a multiple of its size, not every visitor', () => {
  it('leases 200 among 5,000 identifies (100 in its first pass, the bound of one call) in at most 2,000 rows', async () => {
    const db = new Sqlite(tempFile());
    db.pragma('journal_mode = WAL');
    const counted = countingRows(sqlitePort(fromLibsql(db)));
    const { outbox } = await createSqlOutbox(counted.port);
    const now = Date.now();
    const merge = (i: number) => ({ kind: 'merge' as const, entry: { identifiers: { email: `m${i}@x.example` } } });
    await outbox.accept(
      Array.from({ length: 5000 }, (_, i) => item('s', `m${i}`, merge(i))),
      now,
      3600_000,
    );
    const before = counted.rows();
    const leased = await outbox.lease('me', 200, now, 60_000);
    const rows = counted.rows() - before;
    // Nothing but identifies: the lease takes as many as it may, the 200 longest-waiting visitors'.
    expect(leased.map((entry) => entry.id).sort()).toEqual(Array.from({ length: 200 }, (_, i) => `m${i}`).sort());
    // Its first pass reads lanes only until twice its size (1,804 rows); with pages of lanes and no such stop, every lane
    // of the site and its identify (11,004 rows); before pages, 2,204.
    expect(rows).toBeLessThanOrEqual(2000);
  });
});

describe('SQLite: a lone accept of a site already known reads no site, and reads and moves its counts in one statement each', () => {
  it('runs 11 statements, none of them on outbox_sites', async () => {
    const db = new Sqlite(tempFile());
    db.pragma('journal_mode = WAL');
    const { port, during } = recorded(db);
    const { outbox } = await createSqlOutbox(port);
    const now = Date.now();
    await outbox.accept([item('s', 'first')], now, 3600_000);
    const statements = await during(() => outbox.accept([item('s', 'second', { visitor: 'v2' })], now, 3600_000));
    // A site's number is kept once the transaction that read it committed (a site is never deleted nor numbered again),
    // and the outbox's counts and its highest seq are read in one statement and the counts moved in one: 15 statements
    // when the site was read in every transaction and each count and the seq on its own.
    expect(statements.filter((sql) => sql.includes('outbox_sites'))).toEqual([]);
    expect(statements.length).toBeLessThanOrEqual(11);
    db.close();
  });
});

describe('SQLite: the accepts that arrive together share their transaction and its statements, and a lease and a settle theirs', () => {
  /**
   * Statements of `visitors` accepts of 10 (one per visitor) made together, then of one lease and
   * one settle of all their entries; `identify`: the entry before them is an identify (of another browser);
   * `apart`: the ms between the times the accepts came (as a busy relay's requests do over a transaction's time).
   */
  async function statementsFor(visitors: number, identify = false, apart = 0) {
    const db = new Sqlite(tempFile());
    db.pragma('journal_mode = WAL');
    const { port, during } = recorded(db);
    const { outbox } = await createSqlOutbox(port);
    const now = Date.now();
    const merge = { kind: 'merge' as const, entry: { identifiers: { email: 'first@x.example' } } };
    await outbox.accept([item('s', 'first', identify ? merge : {})], now, 3600_000);
    const batches = Array.from({ length: visitors }, (_, v) => Array.from({ length: 10 }, (_, i) => item('s', `v${v}-${i}`, { visitor: `v${v}` })));
    let answers: Awaited<ReturnType<typeof outbox.accept>>[] = [];
    const accept = await during(async () => {
      answers = await Promise.all(batches.map((batch, v) => outbox.accept(batch, now + v * apart, 3600_000)));
    });
    expect(answers.map((answer) => answer.accepted.length)).toEqual(batches.map(() => 10));
    let leased: Awaited<ReturnType<typeof outbox.lease>> = [];
    const lease = await during(async () => {
      leased = await outbox.lease('me', 10 * visitors + 10, now, 60_000);
    });
    expect(leased).toHaveLength(10 * visitors + 1);
    const settle = await during(() => outbox.settle('me', { delivered: leased.map((entry) => entry.seq), released: [], dead: [] }, now));
    expect(await outbox.stats()).toMatchObject({ pending: 0, remembered: 10 * visitors + 1 });
    db.close();
    return { accept: accept.length, lease: lease.length, settle: settle.length };
  }

  it('16 or 48 accepts of 10 from as many visitors run the same few statements, and so do a lease and a settle of all their entries', async () => {
    const few = await statementsFor(16);
    const many = await statementsFor(48);
    // The lanes' lookup and counts, the dedupe, the insert, the expiry and the outbox's counts go once for all of them.
    // (Each accept on its own: 17 statements, 272 for 16; each lane looked up on its own: 43; each lane counted on its own: 31 and 63.)
    expect(few.accept).toBeLessThanOrEqual(16);
    expect(many.accept).toBe(few.accept);
    // The lanes' first entries are read together, one statement per site (a statement per lane or more: 41 and 105).
    expect(few.lease).toBeLessThanOrEqual(10);
    expect(many.lease).toBe(few.lease);
    // With an identify in the outbox, the site's entries are checked for one in that statement, not in one per lane.
    expect((await statementsFor(48, true)).lease).toBeLessThanOrEqual(few.lease + 1);
    // One statement for the delivered entries, one for the lanes they empty (each lane counted and dropped on its own: 42 and 106;
    // counted down, then dropped: one more); one looks where the entries wait, and finds them all under the lease (two more looked in the other places: 10).
    expect(few.settle).toBeLessThanOrEqual(7);
    expect(many.settle).toBe(few.settle);
  });

  it('16 accepts that came a millisecond apart run the statements of 16 that came in the same one', async () => {
    // Their ids share the latest end (a millisecond longer for the first, at most a second): one dedupe statement, not
    // one for each end (30 statements in all against 15).
    expect((await statementsFor(16, false, 1)).accept).toBe((await statementsFor(16)).accept);
  });

  it('an accept that came more than a second before the others of its transaction keeps its own end', async () => {
    const db = new Sqlite(tempFile());
    const { outbox } = await createSqlOutbox(sqlitePort(fromLibsql(db)));
    const now = Date.now();
    await Promise.all([outbox.accept([item('s', 'early')], now, 10_000), outbox.accept([item('s', 'late')], now + 5000, 10_000)]);
    // The early id's window has passed; the late one's (5 s later) has not.
    expect(await outbox.accept([item('s', 'early'), item('s', 'late')], now + 10_000, 10_000)).toEqual({ accepted: ['early'], duplicate: ['late'], full: [] });
    db.close();
  });
});

describe("SQLite: an entry's row, with its item, is written once and deleted once", () => {
  it('a lease, its sends and its settle never write the entries they deliver again, and write one row of their own whatever their size', async () => {
    const db = new Sqlite(tempFile());
    db.pragma('journal_mode = WAL');
    const { outbox } = await createSqlOutbox(sqlitePort(fromLibsql(db)));
    db.exec(
      'CREATE TEMP TABLE rewritten (seq INTEGER); CREATE TEMP TRIGGER outbox_rewritten AFTER UPDATE ON main.outbox BEGIN INSERT INTO rewritten VALUES (new.seq); END;',
    );
    // Every write of a lease's own rows, by table.
    const leaseWrites = countWrites(db, ['outbox_lease', 'outbox_leases']);
    const now = Date.now();
    await outbox.accept(
      Array.from({ length: 50 }, (_, i) => item('s', `w${i}`, { visitor: `v${i % 5}` })),
      now,
      3600_000,
    );
    // Each item is stored as JSON text (what the outbox's JSON functions read), though it is bound as bytes.
    expect(db.prepare('SELECT DISTINCT typeof(item), json_valid(item) FROM outbox').raw().all()).toEqual([['text', 1]]);
    const leased = await outbox.lease('me', 50, now, 60_000);
    const sent = await outbox.sending(
      'me',
      leased.map(({ seq }) => seq),
      now,
    );
    expect(sent).toHaveLength(50);
    expect(await outbox.settle('me', { delivered: sent, released: [], dead: [] }, now)).toEqual({ skipped: 0 });
    expect(await outbox.stats()).toMatchObject({ pending: 0 });
    // Before, the lease (owner, until) and each send (attempts + 1) rewrote every row whole: 100 here.
    expect(db.prepare('SELECT count(*) FROM rewritten').raw().get()).toEqual([0]);
    // And the row is its table's alone: no index of the outbox is written with it (outbox_lane was, read by nothing).
    expect(db.prepare("SELECT name FROM pragma_index_list('outbox')").raw().all()).toEqual([]);
    // One row for the lease: written, rewritten by the call started, deleted by the settle (a row per entry: 150 writes).
    expect(leaseWrites.counts()).toEqual([
      ['outbox_leases', 'DELETE', 1],
      ['outbox_leases', 'INSERT', 1],
      ['outbox_leases', 'UPDATE', 1],
    ]);
    db.close();
  });
});

describe("SQLite: a lease's rows are cut as the deliverer's calls take its entries", () => {
  it('each call of a lease sent a round of browsers at a time writes its own row of the lease once, and deletes it once', async () => {
    const db = new Sqlite(tempFile());
    db.pragma('journal_mode = WAL');
    const { outbox } = await createSqlOutbox(sqlitePort(fromLibsql(db)));
    const leaseWrites = countWrites(db, ['outbox_leases']);
    const now = Date.now();
    // 15 browsers of 20 tracks each, each request's together: the deliverer's calls of 100 take every browser's first run of 10,
    // then every one's second (cut in seq order instead, the second call's entries would lie in all three rows).
    for (let b = 0; b < 15; b++)
      await outbox.accept(
        Array.from({ length: 20 }, (_, i) => item('s', `b${b}-${i}`, { visitor: `v${b}`, browser: `v${b}` })),
        now,
        3600_000,
      );
    const leased = await outbox.lease('me', 300, now, 60_000);
    const calls = planCalls(leased, { mergeBy: () => [], proven: () => false }).flatMap((call) => parts(call, 100));
    expect(calls.map((call) => call.entries.length)).toEqual([100, 100, 100]);
    for (const call of calls) {
      const sent = await outbox.sending(
        'me',
        call.entries.map(({ seq }) => seq),
        now,
      );
      expect(await outbox.settle('me', { delivered: sent, released: [], dead: [] }, now)).toEqual({ skipped: 0 });
    }
    expect(await outbox.stats()).toMatchObject({ pending: 0 });
    // Three rows, each written, rewritten by its call's start and deleted by its settle. Cut in seq order (ten browsers a row),
    // each call held entries of every row: 9 rewrites by the starts, 9 deletes by the settles and 6 rows put back.
    expect(leaseWrites.counts()).toEqual([
      ['outbox_leases', 'DELETE', 3],
      ['outbox_leases', 'INSERT', 3],
      ['outbox_leases', 'UPDATE', 3],
    ]);
    db.close();
  });
});

describe("SQLite: an accept writes each visitor's lane once", () => {
  it('a new lane is written with its counts, and a visitor given nothing (full) gets no lane at all', async () => {
    const db = new Sqlite(tempFile());
    db.pragma('journal_mode = WAL');
    const { outbox } = await createSqlOutbox(sqlitePort(fromLibsql(db)));
    const laneWrites = countWrites(db, ['outbox_lanes']);
    const now = Date.now();
    const limits = { total: 1000, site: 1000, visitor: 10, dead: 1000 };
    // 5 new visitors, 10 entries each, in two accepts that share their transaction: 5 rows written, once each.
    const batches = [0, 1].map((half) => Array.from({ length: 25 }, (_, i) => item('s', `w${half}-${i}`, { visitor: `v${i % 5}` })));
    await Promise.all(batches.map((batch) => outbox.accept(batch, now, 3600_000, limits)));
    // (Before, each was created empty, then counted: 10 writes.)
    expect(laneWrites.counts()).toEqual([['outbox_lanes', 'INSERT', 5]]);
    // v0 is full, and a new visitor's entry is refused by the outbox's limit: neither lane is written (before: v5's made, then deleted).
    laneWrites.forget();
    const answer = await outbox.accept([item('s', 'more', { visitor: 'v0' }), item('s', 'new', { visitor: 'v5' })], now, 3600_000, { ...limits, total: 50 });
    expect(answer.full).toEqual(['more', 'new']);
    expect(laneWrites.counts()).toEqual([]);
    expect(await outbox.stats()).toMatchObject({ pending: 50 });
    expect((await outbox.lease('me', 100, now, 60_000)).length).toBe(50);
    db.close();
  });
});

type SqlOutbox = Awaited<ReturnType<typeof createSqlOutbox>>['outbox'];

/**
 * SQLite's own count of the virtual-machine steps `call` ran on an outbox in a file (every
 * statement stays prepared: `sqlite_stmt` sums them), once `fill` has run: the work of the rows
 * read and written, whatever the machine's load. `of`: only the statements whose text is like it.
 */
async function stepsOf(fill: (outbox: SqlOutbox) => Promise<void>, call: (outbox: SqlOutbox) => Promise<void>, of = '%') {
  const db = new Sqlite(tempFile());
  db.pragma('journal_mode = WAL');
  const { outbox } = await createSqlOutbox(sqlitePort(fromLibsql(db)));
  try {
    await fill(outbox);
    const steps = db.prepare('SELECT coalesce(sum(nstep), 0) FROM sqlite_stmt WHERE sql LIKE ?1').raw();
    const before = Number((steps.get(of) as unknown[])[0]);
    await call(outbox);
    return Number((steps.get(of) as unknown[])[0]) - before;
  } finally {
    db.close();
  }
}

/** `held` entries accepted 1,000 a call, `make(k, i)` the i-th of call k, at `now + at(k)`. */
async function acceptHeld(outbox: SqlOutbox, held: number, make: (k: number, i: number) => OutboxItem, at: (k: number) => number, windowMs: number) {
  for (let k = 0; k < held / 1000; k++)
    await outbox.accept(
      Array.from({ length: 1000 }, (_, i) => make(k, i)),
      at(k),
      windowMs,
    );
}

describe("SQLite: an accept looks for its browsers' identifies, not at every identify of the site", () => {
  /** VM steps of one accept of a track of a new browser, beside `held` identifies of other browsers waiting in the outbox. */
  const stepsBeside = (held: number) => {
    const now = Date.now();
    const merge = { kind: 'merge' as const, entry: { identifiers: { email: 'someone@x.example' } } };
    return stepsOf(
      (outbox) =>
        acceptHeld(
          outbox,
          held,
          (k, i) => item('s', `m${k}-${i}`, merge),
          () => now,
          3600_000,
        ),
      async (outbox) => {
        expect((await outbox.accept([item('s', 'track')], now, 3600_000)).accepted).toEqual(['track']);
        expect(await outbox.stats()).toMatchObject({ pending: held + 1 });
      },
    );
  };

  it('costs the same beside 20,000 identifies of other browsers as beside 2,000', async () => {
    const few = await stepsBeside(2000);
    const many = await stepsBeside(20_000);
    // Before, the look searched the identifies by site alone: every one of them, 10 times the steps here.
    expect(many).toBeLessThan(few * 1.2);
  }, 60_000);
});

describe('SQLite: an accept hands its ids to SQLite as they are, not each with its site and end, and reads no row back when all are new', () => {
  it('remembers 100 new ids of one site in about 25 VM steps each', async () => {
    const now = Date.now();
    const steps = await stepsOf(
      async (outbox) => {
        await outbox.accept(
          Array.from({ length: 1000 }, (_, i) => item('s', `old${i}`)),
          now,
          3600_000,
        );
      },
      async (outbox) => {
        const answer = await outbox.accept(
          Array.from({ length: 100 }, (_, i) => item('s', `new${i}`, { visitor: `v${i % 10}` })),
          now,
          3600_000,
        );
        expect(answer.accepted).toHaveLength(100);
      },
      '%outbox_seen%',
    );
    // The ids of a site that end together go in one blob of their bytes, and no row is answered
    // for each when all are new. As [site, id, end] triples (each written back as text by
    // json_each, then parsed again for each field) the same accept ran 4,461 steps; as a list of
    // hex strings with a `RETURNING` row an id, 3,958 (bench/README).
    expect(steps).toBeLessThan(3000);
  });
});

describe('SQLite: a request sent again among others that arrive with it costs the dedupe its own ids, not a row for each of theirs', () => {
  it('16 accepts of 10 together, one of them sent before, in fewer VM steps than a row answered for each new id', async () => {
    const now = Date.now();
    const batch = (v: number) => Array.from({ length: 10 }, (_, i) => item('s', `r${v}-${i}`, { visitor: `v${v}` }));
    let answers: Awaited<ReturnType<SqlOutbox['accept']>>[] = [];
    const steps = await stepsOf(
      async (outbox) => {
        await outbox.accept(batch(7), now, 3600_000);
      },
      async (outbox) => {
        answers = await Promise.all(Array.from({ length: 16 }, (_, v) => outbox.accept(batch(v), now, 3600_000)));
      },
      '%outbox_seen%',
    );
    expect(answers.map((answer) => answer.accepted.length)).toEqual(Array.from({ length: 16 }, (_, v) => (v === 7 ? 0 : 10)));
    // The group's insert fails on the key; then each accept's ids go again on their own, and only the one sent before
    // is asked which of its ids are new: 5,925 steps of outbox_seen's statements. 7,885 when the whole group was asked
    // again, a row for each of its 150 new ids; 6,168 with the ids as hex strings and a RETURNING row for each new one.
    expect(steps).toBeLessThan(6000);
  });
});

describe('SQLite: an accept reads the ids past their window it forgets, and its own, not every id of their site', () => {
  /**
   * VM steps of one accept of 100 new ids once `held` ids (1,000 ending a ms) are all past their
   * window: its slice forgets the oldest 1,000 and leaves the rest for later slices.
   */
  const expirySteps = (held: number) => {
    const now = Date.now();
    return stepsOf(
      (outbox) =>
        acceptHeld(
          outbox,
          held,
          (k, i) => item('s', `k${k}-${i}`),
          (k) => now + k,
          1000,
        ),
      async (outbox) => {
        const late = Array.from({ length: 100 }, (_, i) => item('s', `late${i}`));
        expect((await outbox.accept(late, now + 1000 + held / 1000, 60_000)).accepted).toHaveLength(100);
        expect(await outbox.stats()).toMatchObject({ remembered: held - 1000 + 100 });
      },
    );
  };

  it('costs the same with 20,000 ids of the site past their window as with 2,000', async () => {
    const few = await expirySteps(2000);
    const many = await expirySteps(20_000);
    // Before, the slice searched the ids by site alone (every id of the site), and the batch's ids
    // were matched against every id past its window: 10 and 19 times the work here.
    expect(many).toBeLessThan(few * 1.2);
  }, 60_000);
});

describe('SQLite: a settle looks for identifies among the entries it delivers once, not behind each one', () => {
  it('delivers 1,000 tracks, beside an identify of another browser released for later, in a few steps of the identifies table', async () => {
    const now = Date.now();
    let leased: number[] = [];
    const steps = await stepsOf(
      async (outbox) => {
        await outbox.accept([item('s', 'id', { kind: 'merge', entry: { identifiers: { email: 'later@x.example' } } })], now, 3600_000);
        const [merge] = await outbox.lease('me', 1, now, 60_000);
        await outbox.settle('me', { delivered: [], released: [{ seq: merge!.seq, notBefore: now + 3600_000 }], dead: [] }, now);
        await acceptHeld(
          outbox,
          1000,
          (k, i) => item('s', `t${k}-${i}`, { visitor: `v${i % 10}` }),
          () => now,
          3600_000,
        );
        leased = (await outbox.lease('me', 1000, now, 60_000)).map(({ seq }) => seq);
        expect(leased).toHaveLength(1000);
      },
      async (outbox) => {
        expect(await outbox.settle('me', { delivered: leased, released: [], dead: [] }, now)).toEqual({ skipped: 0 });
        // The identify still waits.
        expect(await outbox.stats()).toMatchObject({ pending: 1 });
      },
      '%outbox_merges%',
    );
    // Before, each delivered entry was looked up among the identifies: 8,000 steps here.
    expect(steps).toBeLessThan(100);
  }, 60_000);
});
