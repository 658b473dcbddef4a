// A state file of the release that kept each lease in the entry's own row (test/fixtures/before-lease-table,
// written by its make.ts with that release's code), opened by this one: every lease carries over to
// `outbox_lease` with its owner, its end and its started sends, and every entry is delivered once. And rows of leases
// written before they kept their seqs' range.
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'libsql';
import { expect, it } from 'vitest';
import type { Leased } from '../../src/relay/state/outbox.js';
import { openDriver } from '../../src/relay/state/sqlite-driver.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { item } from './suite/outbox-suite.js';

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'before-lease-table');
/** What make.ts did, at times of its own clock T. */
const before = JSON.parse(readFileSync(join(FIXTURE, 'leases.json'), 'utf8')) as {
  T: number;
  ids: string[];
  live: number[];
  lost: number[];
  released: number;
  releasedTried: number;
  next: number[];
};

it('an outbox written before outbox_lease keeps its leases, their ends and sends, and delivers each entry once', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'cdp-upgrade-leases-')), 'relay-state.db');
  copyFileSync(join(FIXTURE, 'relay-state.db'), path);
  const { T, live, lost, released, releasedTried, next } = before;
  const store = await createSqliteOutbox(path);
  const { outbox } = store;
  const delivered: string[] = [];
  const deliver = async (owner: string, leased: Leased[], now: number) => {
    expect(await outbox.settle(owner, { delivered: leased.map(({ seq }) => seq), released: [], dead: [] }, now)).toEqual({ skipped: 0 });
    delivered.push(...leased.map(({ id }) => id));
  };
  try {
    expect(await outbox.stats()).toMatchObject({ pending: 10 });
    // The index by lane that release kept (read by nothing now) is dropped.
    const schema = await openDriver(path, 'the test');
    expect(schema.prepare("SELECT name FROM pragma_index_list('outbox')").all()).toEqual([]);
    schema.close();
    // At T + 3 s: the live leases (old-live's, old-next's) and the released entries (until T + 30 s) stay where they are; the rest is free,
    // the entry of the lease that ran out (back among the ready, never sent) included.
    const first = await outbox.lease('new', 100, T + 3_000, 60_000);
    const held = new Set([...live, ...next, released, releasedTried]);
    expect(first.map(({ seq }) => seq)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1).filter((seq) => !held.has(seq)));
    expect(first.every(({ attempts }) => attempts === 0)).toBe(true);
    // old-live still holds its lease: its sends count, and it settles its entries.
    expect(await outbox.sending('old-live', live, T + 3_000)).toEqual(live);
    expect(await outbox.settle('old-live', { delivered: live, released: [], dead: [] }, T + 3_000)).toEqual({ skipped: 0 });
    delivered.push(...live.map((seq) => before.ids[seq - 1]!));
    // old-lost's lease ran out: one entry is old-next's now, the other was just leased: both skipped.
    expect(await outbox.settle('old-lost', { delivered: lost, released: [], dead: [] }, T + 3_000)).toEqual({ skipped: lost.length });
    await deliver('new', first, T + 3_000);
    // At T + 31 s the released entries are ready again: the tried one with its started send.
    const second = await outbox.lease('new', 100, T + 31_000, 60_000);
    expect(second.map(({ seq, attempts }) => [seq, attempts])).toEqual([
      [released, 0],
      [releasedTried, 1],
    ]);
    await deliver('new', second, T + 31_000);
    // old-next's lease holds until T + 62 s; then its entry, sent under old-lost's lease, comes back in doubt.
    expect(await outbox.lease('new', 100, T + 61_000, 60_000)).toEqual([]);
    const third = await outbox.lease('new', 100, T + 63_000, 60_000);
    expect(third.map(({ seq, attempts }) => [seq, attempts])).toEqual(next.map((seq) => [seq, 1]));
    await deliver('new', third, T + 63_000);
    expect(await outbox.lease('new', 100, T + 200_000, 60_000)).toEqual([]);
    expect([...delivered].sort()).toEqual([...before.ids].sort());
    expect(await outbox.stats()).toMatchObject({ pending: 0 });
  } finally {
    await store.close();
  }
});

it('rows of leases written before they kept their seqs’ range are read as spanning them all', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'cdp-upgrade-ranges-')), 'relay-state.db');
  const now = Date.now();
  const seqsOf = (leased: Leased[]) => leased.map(({ seq }) => seq);
  let early: number[] = [];
  let late: number[] = [];
  {
    const store = await createSqliteOutbox(path);
    await store.outbox.accept(
      Array.from({ length: 6 }, (_, i) => item('s', `r${i}`, { visitor: `v${i % 2}` })),
      now,
      3600_000,
    );
    early = seqsOf(await store.outbox.lease('early', 3, now, 1000));
    expect(await store.outbox.sending('early', early, now)).toEqual(early);
    late = seqsOf(await store.outbox.lease('late', 3, now, 60_000));
    await store.close();
  }
  // The table as that release made it: no lo, no hi.
  const db = new Sqlite(path);
  db.exec(`CREATE TABLE old_leases (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, until INTEGER NOT NULL, entries TEXT NOT NULL);
    INSERT INTO old_leases SELECT id, owner, until, entries FROM outbox_leases; DROP TABLE outbox_leases; ALTER TABLE old_leases RENAME TO outbox_leases;
    CREATE INDEX outbox_leases_owner ON outbox_leases (owner); CREATE INDEX outbox_leases_until ON outbox_leases (until, id);`);
  db.close();
  const store = await createSqliteOutbox(path);
  try {
    // The live lease's sends and settle find its row.
    expect(await store.outbox.sending('late', late, now + 10)).toEqual(late);
    expect(await store.outbox.settle('late', { delivered: late, released: [], dead: [] }, now + 10)).toEqual({ skipped: 0 });
    // The one that ran out comes back, its sends counted.
    const again = await store.outbox.lease('next', 10, now + 2000, 1000);
    expect(again.map(({ seq, attempts }) => [seq, attempts])).toEqual(early.map((seq) => [seq, 1]));
    expect(await store.outbox.settle('next', { delivered: seqsOf(again), released: [], dead: [] }, now + 2000)).toEqual({ skipped: 0 });
    expect(await store.outbox.stats()).toMatchObject({ pending: 0 });
  } finally {
    await store.close();
  }
});
