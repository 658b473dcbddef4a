/**
 * Identify before track, as a rule of the store's lease (outbox-suite.ts runs it on every store):
 * a browser's activity is not leased while that browser has an earlier merge in the outbox, ready,
 * released for later or leased by anyone, live or dead. Only delivering or dead-lettering the
 * merge lets the activity go, so a deliverer that knows nothing of another's calls (a standby
 * after a takeover) cannot send a track before its identify.
 */
import { expect, it } from 'vitest';
import type { Leased, Outbox, OutboxItem } from '../../../src/relay/state/outbox.js';

type WithStore = (run: (handle: { outbox: Outbox; another(): Promise<{ outbox: Outbox; close(): Promise<void> }> }) => Promise<void>) => () => Promise<void>;

const WINDOW = 7 * 24 * 3600_000;

export function outboxOrderCases(withStore: WithStore, item: (site: string, id: string, overrides?: Partial<OutboxItem>) => OutboxItem): void {
  const identify = (site: string, id: string, browser: string) =>
    item(site, id, { kind: 'merge', browser, visitor: `v-${browser}`, entry: { identifiers: { email: `${browser}@x.example` } } });
  const track = (site: string, id: string, browser: string) => item(site, id, { browser, visitor: `v-${browser}` });
  const ids = (leased: readonly Leased[]) => leased.map((entry) => entry.id);

  it(
    'leases no activity while its browser has an earlier merge in the outbox: ready, released, or leased by a deliverer that died',
    withStore(async ({ outbox, another }) => {
      const now = Date.now();
      // b: identify, track, identify, track. c: a track only. The same browser name at another site is another browser.
      await outbox.accept(
        [identify('o', 'm1', 'b'), track('o', 't1', 'b'), track('o', 'c1', 'c'), identify('o', 'm2', 'b'), track('o', 't2', 'b'), track('p', 'x1', 'b')],
        now,
        WINDOW,
      );
      // Not in the same lease as its merge either: the merge is in the outbox until it is settled.
      const first = await outbox.lease('old#1', 10, now, 1000);
      expect(ids(first).sort()).toEqual(['c1', 'm1', 'm2', 'x1']);
      // The old leader releases m1 for later (a 503) and dies holding m2: a standby sees neither track.
      await outbox.settle(
        'old#1',
        {
          delivered: first.filter((entry) => ['c1', 'x1'].includes(entry.id)).map((entry) => entry.seq),
          released: [{ seq: first.find((entry) => entry.id === 'm1')!.seq, notBefore: now + 500 }],
          dead: [],
        },
        now,
      );
      const other = await another();
      try {
        expect(ids(await other.outbox.lease('new#1', 10, now + 100, 1000))).toEqual([]);
        // Once m1 may go again and the dead leader's lease ran out, the merges come back, still not the tracks.
        const again = await other.outbox.lease('new#2', 10, now + 1100, 1000);
        expect(ids(again)).toEqual(['m1', 'm2']);
        const [m1, m2] = again;
        // m1 delivered: t1 goes (m2 came after it); t2 still waits for m2.
        await other.outbox.settle('new#2', { delivered: [m1!.seq], released: [], dead: [] }, now + 1200);
        const tracks = await other.outbox.lease('new#3', 10, now + 1200, 1000);
        expect(ids(tracks)).toEqual(['t1']);
        // A merge refused for good no longer holds its browser's tracks.
        await other.outbox.settle('new#2', { delivered: [], released: [], dead: [{ seq: m2!.seq, reason: 'refused', status: 400 }] }, now + 1300);
        expect(ids(await other.outbox.lease('new#4', 10, now + 1300, 1000))).toEqual(['t2']);
      } finally {
        await other.close();
      }
    }),
  );

  it(
    'holds an activity again behind a dead-lettered merge that is retried, and frees it when the merge is dropped',
    withStore(async ({ outbox }) => {
      const now = Date.now();
      await outbox.accept([identify('r', 'm', 'b'), track('r', 't', 'b')], now, WINDOW);
      const [merge] = await outbox.lease('one#1', 10, now, 1000);
      expect(merge?.id).toBe('m');
      await outbox.settle('one#1', { delivered: [], released: [], dead: [{ seq: merge!.seq, reason: 'refused', status: 400 }] }, now);
      expect(await outbox.retryDead([merge!.seq], now)).toBe(1);
      // The retried merge is back in the outbox, before the track: it goes first.
      expect(ids(await outbox.lease('one#2', 10, now, 1000))).toEqual(['m']);
      await outbox.settle('one#2', { delivered: [], released: [], dead: [{ seq: merge!.seq, reason: 'refused', status: 400 }] }, now);
      expect(await outbox.dropDead([merge!.seq])).toBe(1);
      expect(ids(await outbox.lease('one#3', 10, now, 1000))).toEqual(['t']);
    }),
  );

  it(
    "leases a browser's merges in order: a later one waits while an earlier one is released or leased elsewhere, and goes in the same lease as it",
    withStore(async ({ outbox }) => {
      const now = Date.now();
      await outbox.accept([identify('q', 'm1', 'b'), identify('q', 'm2', 'b'), identify('q', 'n1', 'c')], now, WINDOW);
      // Both of b's merges in one lease (the deliverer sends them in order); c's too.
      const first = await outbox.lease('one#1', 10, now, 1000);
      expect(ids(first)).toEqual(['m1', 'm2', 'n1']);
      const [m1, m2, n1] = first;
      // m1 is released for later (a 503): m2 and a newer merge of b wait for it; a newer one of c does not.
      await outbox.settle('one#1', { delivered: [n1!.seq], released: [m1!, m2!].map(({ seq }) => ({ seq, notBefore: now + 500 })), dead: [] }, now);
      await outbox.accept([identify('q', 'm3', 'b'), identify('q', 'n2', 'c')], now, WINDOW);
      const others = await outbox.lease('one#2', 10, now + 100, 1000);
      expect(ids(others)).toEqual(['n2']);
      await outbox.settle('one#2', { delivered: others.map(({ seq }) => seq), released: [], dead: [] }, now + 100);
      // m1 leased by a deliverer that then dies: m2 and m3 still wait, until its lease runs out.
      const again = await outbox.lease('one#3', 1, now + 600, 1000);
      expect(ids(again)).toEqual(['m1']);
      expect(ids(await outbox.lease('one#4', 10, now + 700, 1000))).toEqual([]);
      expect(ids(await outbox.lease('one#5', 10, now + 1700, 1000))).toEqual(['m1', 'm2', 'm3']);
    }),
  );
}
