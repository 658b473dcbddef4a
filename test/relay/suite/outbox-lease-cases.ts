/**
 * Lease by readiness, with bounded work (outbox-suite.ts runs these on every store): a lease finds
 * the visitors that have an entry ready now, whatever waits before them (lanes whose entries were
 * released for later, entries held behind their browser's identify), and what it reads is bounded
 * by its size, not by the backlog (nor by how many visitors are ready beyond those it takes from):
 * rows on SQL, commands on Redis, entries looked at in memory.
 */
import { expect, it } from 'vitest';
import type { Leased, Outbox, OutboxItem } from '../../../src/relay/state/outbox.js';

/** What one call costs the store: rows read (SQL), commands run (Redis), entries and lanes looked at (memory). */
export type Reads = (run: () => Promise<unknown>) => Promise<number>;

type WithStore = (run: (handle: { outbox: Outbox; reads?: Reads }) => Promise<void>) => () => Promise<void>;

const WINDOW = 7 * 24 * 3600_000;
const HOUR = 3600_000;
/** Entries one lease or settle takes here when a case releases a backlog. */
const BULK = 2_000;
/**
 * Items one accept carries when a case fills a store with a backlog (outboxSuite's `fill`): the
 * 200,000 entries go in 11 calls instead of 100, which took that case from 18.5 to 10 s on the
 * Durable Object and 10.5 to 7 s on SQLite; what a call costs a store is not what these cases test.
 */
export const FILL = 19_000;

export function outboxLeaseCases(withStore: WithStore, item: (site: string, id: string, overrides?: Partial<OutboxItem>) => OutboxItem, fill = FILL): void {
  const ids = (leased: readonly Leased[]) => leased.map((entry) => entry.id).sort();
  /** What `run` cost the store; every store's target counts it. */
  const cost = (reads: Reads | undefined, run: () => Promise<unknown>) => {
    if (reads === undefined) throw new Error('this store’s target counts no reads');
    return reads(run);
  };
  const acceptAll = async (outbox: Outbox, items: readonly OutboxItem[], now: number) => {
    for (let i = 0; i < items.length; i += fill) expect((await outbox.accept(items.slice(i, i + fill), now, WINDOW)).full).toEqual([]);
  };
  /** Leases every entry ready (`count` of them) and releases them all until an hour later. */
  const releaseAll = async (outbox: Outbox, count: number, now: number) => {
    for (let left = count; left > 0; left -= BULK) {
      const leased = await outbox.lease('releaser', Math.min(left, BULK), now, 1000);
      expect(leased).toHaveLength(Math.min(left, BULK));
      const released = leased.map(({ seq }) => ({ seq, notBefore: now + HOUR }));
      expect(await outbox.settle('releaser', { delivered: [], released, dead: [] }, now)).toEqual({ skipped: 0 });
    }
  };

  it(
    'leases a newer ready visitor in the first lease, past 2,000 older lanes (in 200 sites) whose entries were released for later',
    withStore(async ({ outbox, reads }) => {
      const now = Date.now();
      // 2,000 visitors, each its own lane, spread over 200 sites: all released for an hour (a 429, an outage, the breaker).
      await acceptAll(
        outbox,
        Array.from({ length: 2000 }, (_, i) => item(`stale${i % 200}`, `s${i}`)),
        now,
      );
      await releaseAll(outbox, 2000, now);
      // Then one new visitor in one of those sites, and one in a new site: both go in the next lease.
      await outbox.accept([item('stale7', 'fresh'), item('new', 'other')], now + 1, WINDOW);
      let leased: Leased[] = [];
      const read = await cost(reads, async () => {
        leased = await outbox.lease('next', 100, now + 2, 1000);
      });
      expect(ids(leased)).toEqual(['fresh', 'other']);
      expect(read).toBeLessThanOrEqual(5 * 100);
      // The stale ones come back when their time comes, all of them.
      expect(await outbox.lease('later', 100, now + 3, 1000)).toEqual([]);
      let back = 0;
      for (let n = 0; n < 40 && back < 2000; n++) back += (await outbox.lease(`back${n}`, 100, now + HOUR, 1000)).length;
      expect(back).toBe(2000);
    }),
  );

  it(
    'gives the first turn to the site whose entries began waiting first, not to the site the store knew first',
    withStore(async ({ outbox }) => {
      const now = Date.now();
      // Site a is known first and its entry leaves; then b's entry comes, then a's again.
      await outbox.accept([item('a', 'a0')], now, WINDOW);
      const gone = await outbox.lease('x', 1, now, 1000);
      await outbox.settle('x', { delivered: gone.map(({ seq }) => seq), released: [], dead: [] }, now);
      await outbox.accept([item('b', 'b1')], now + 1, WINDOW);
      await outbox.accept([item('a', 'a1')], now + 2, WINDOW);
      expect(ids(await outbox.lease('one', 1, now + 3, 1000))).toEqual(['b1']);
    }),
  );

  it(
    'takes a call’s worth of identifies while other entries are ready, and every ready one when nothing else is',
    withStore(async ({ outbox }) => {
      const now = Date.now();
      const identify = (n: number) => item('ids', `m${n}`, { kind: 'merge', entry: { identifiers: { email: `m${n}@x.example` } } });
      await outbox.accept([...Array.from({ length: 150 }, (_, n) => identify(n)), ...Array.from({ length: 100 }, (_, n) => item('ids', `t${n}`))], now, WINDOW);
      // Merge calls go one at a time: 100 identifies (one call) and the tracks, then the other 50.
      const first = await outbox.lease('one', 200, now, 1000);
      expect(first.filter((entry) => entry.kind === 'merge')).toHaveLength(100);
      expect(first.filter((entry) => entry.kind === 'activity')).toHaveLength(100);
      expect(await outbox.lease('two', 200, now, 1000)).toHaveLength(50);
      // Nothing but identifies: the lease takes them all.
      await outbox.accept(
        Array.from({ length: 150 }, (_, n) => identify(150 + n)),
        now,
        WINDOW,
      );
      expect(await outbox.lease('three', 200, now, 1000)).toHaveLength(150);
    }),
  );

  it(
    'reads as much to lease 100 among 2,000 ready visitors as among 100, in one site or in 20',
    withStore(async ({ outbox, reads }) => {
      const now = Date.now();
      /** What a lease of 100 reads with `visitors` ready (one entry each) in `sites` sites; then every entry is delivered. */
      const leaseAmong = async (visitors: number, sites: number) => {
        const site = (i: number) => `ready${visitors}-${sites}-${i % sites}`;
        await acceptAll(
          outbox,
          Array.from({ length: visitors }, (_, i) => item(site(i), `v${visitors}-${sites}-${i}`)),
          now,
        );
        let leased: Leased[] = [];
        const read = await cost(reads, async () => {
          leased = await outbox.lease('probe', 100, now + 1, 1000);
        });
        // One entry from each of 100 visitors: each site's longest-waiting in turn.
        expect(new Set(leased.map((entry) => entry.visitor)).size).toBe(100);
        expect(new Set(leased.map((entry) => entry.site)).size).toBe(sites);
        const deliver = (owner: string) => outbox.settle(owner, { delivered: leased.map(({ seq }) => seq), released: [], dead: [] }, now + 1);
        await deliver('probe');
        for (let left = visitors - 100; left > 0; left -= leased.length) {
          leased = await outbox.lease('rest', BULK, now + 1, 1000);
          expect(leased.length).toBeGreaterThan(0);
          await deliver('rest');
        }
        expect((await outbox.stats()).pending).toBe(0);
        return read;
      };
      for (const sites of [1, 20]) {
        const few = await leaseAmong(100, sites);
        const many = await leaseAmong(2000, sites);
        // Before, an SQL lease read twice its size of lanes and their first entries (or all there were): in one site 503
        // and 703 rows on SQLite, 1,806 and 2,306 on Durable Objects.
        expect(many).toBeLessThan(few * 1.2);
      }
    }),
  );

  it(
    'fills the lease from one site’s many visitors when the other sites hold less than an even share',
    withStore(async ({ outbox }) => {
      const now = Date.now();
      // Two sites of one visitor each, then a site of 300 visitors, one entry each.
      await outbox.accept([item('tiny1', 'a'), item('tiny2', 'b')], now, WINDOW);
      await acceptAll(
        outbox,
        Array.from({ length: 300 }, (_, i) => item('wide', `w${i}`)),
        now + 1,
      );
      const leased = await outbox.lease('one', 200, now + 2, 1000);
      // Before, a lease looked at no more than 2 × 200 / 3 of a site's lanes: 136 entries.
      expect(ids(leased)).toEqual(['a', 'b', ...Array.from({ length: 198 }, (_, i) => `w${i}`)].sort());
    }),
  );

  it(
    'reads a small multiple of its size in one lease, with 200,000 entries released for later or held behind their identify',
    withStore(async ({ outbox, reads }) => {
      const now = Date.now();
      // 190 browsers, each an identify and then 999 tracks: the identifies leased by a live lease, so every track waits.
      const held: OutboxItem[] = [];
      for (let b = 0; b < 190; b++) {
        const who = { browser: `held${b}`, visitor: `hv${b}` };
        held.push(item('big', `hm${b}`, { ...who, kind: 'merge', entry: { identifiers: { email: `held${b}@x.example` } } }));
        for (let t = 0; t < 999; t++) held.push(item('big', `ht${b}-${t}`, who));
      }
      await acceptAll(outbox, held, now);
      expect(ids(await outbox.lease('identifies', 1000, now, HOUR))).toHaveLength(190);
      // 10 visitors with 1,000 tracks each, released until an hour later.
      await acceptAll(
        outbox,
        Array.from({ length: 10_000 }, (_, n) => item('big', `r${n}`, { visitor: `rv${n % 10}`, browser: `rb${n % 10}` })),
        now,
      );
      await releaseAll(outbox, 10_000, now);
      expect((await outbox.stats()).pending).toBe(200_000);
      // Ten new visitors: one lease of 50 takes their ten entries, and reads a few rows for each.
      await outbox.accept(
        Array.from({ length: 10 }, (_, n) => item('big', `new${n}`)),
        now + 1,
        WINDOW,
      );
      let leased: Leased[] = [];
      const read = await cost(reads, async () => {
        leased = await outbox.lease('probe', 50, now + 2, 1000);
      });
      expect(ids(leased)).toEqual(Array.from({ length: 10 }, (_, n) => `new${n}`).sort());
      expect(read).toBeLessThanOrEqual(5 * 50);
      // And a lease with nothing ready reads next to nothing.
      expect(await cost(reads, () => outbox.lease('empty', 50, now + 3, 1000))).toBeLessThanOrEqual(50);
    }),
    120_000,
  );
}
