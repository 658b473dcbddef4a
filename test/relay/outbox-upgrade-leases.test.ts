// A state file of the release that kept each lease in the entry's own row (test/fixtures/before-lease-table,
// written by its make.ts with that release's code), opened by this one: every lease carries over to
// `outbox_lease` with its owner, its end and its started sends, and every entry is delivered once.
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { Leased } from '../../src/relay/state/outbox.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';

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
