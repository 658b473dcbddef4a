/**
 * A large accept stores every entry as it was given (outbox-suite.ts runs it on every store): the
 * SQL outbox binds an accept's texts in runs of at most 96 KiB (state/sql-accept.ts), and a text of
 * characters of 1 to 4 bytes may end a run or begin the next. Accepts that arrive together (one
 * transaction on SQLite, their ids one statement a site and end: state/sql-seen.ts) answer each id once.
 */
import { expect, it } from 'vitest';
import type { Leased, Outbox, OutboxItem } from '../../../src/relay/state/outbox.js';

type WithStore = (run: (handle: { outbox: Outbox }) => Promise<void>) => () => Promise<void>;

const WINDOW = 7 * 24 * 3600_000;

export function outboxAcceptCases(withStore: WithStore, item: (site: string, id: string, overrides?: Partial<OutboxItem>) => OutboxItem): void {
  it(
    'stores each entry of one accept of 1,000 (0.76 MB of characters of 1 to 4 bytes) as given, and leases it back whole',
    withStore(async ({ outbox }) => {
      const now = Date.now();
      // Each entry's text a different length, so the runs end at every kind of character.
      const glyphs = ['a', 'é', '€', '😀'];
      const items = Array.from({ length: 1000 }, (_, i) =>
        item('big', `e${i}`, {
          visitor: `v${i % 25}`,
          entry: {
            activity_id: 'page',
            fields: { n: `${i}`, text: glyphs[i % 4]!.repeat(300 + (i % 7)) + glyphs[(i + 1) % 4]! },
            created: '2026-11-25T20:00:00.000Z',
          },
        }),
      );
      expect(await outbox.accept(items, now, WINDOW)).toEqual({ accepted: items.map((each) => each.id), duplicate: [], full: [] });
      const leased: Leased[] = [];
      for (let round = 0; round < 20 && leased.length < items.length; round++) {
        const batch = await outbox.lease('reader', 1000, now, 60_000);
        leased.push(...batch);
        await outbox.settle('reader', { delivered: batch.map((entry) => entry.seq), released: [], dead: [] }, now);
      }
      expect(leased).toHaveLength(items.length);
      const byId = new Map(leased.map((entry) => [entry.id, JSON.parse(entry.text) as unknown]));
      for (const each of items) expect([each.id, byId.get(each.id)]).toEqual([each.id, each.entry]);
    }),
  );

  it(
    'answers each id of accepts that arrive together once: one sent before, one sent twice in a call, one in two calls that end apart, the same ids on another site new',
    withStore(async ({ outbox }) => {
      const now = Date.now();
      expect((await outbox.accept([item('t', 'before')], now, WINDOW)).accepted).toEqual(['before']);
      const [first, second, third, other] = await Promise.all([
        outbox.accept([item('t', 'a1'), item('t', 'both'), item('t', 'a2')], now, WINDOW),
        outbox.accept([item('t', 'b1'), item('t', 'before'), item('t', 'b1')], now, WINDOW),
        outbox.accept([item('t', 'both'), item('t', 'c1')], now + 1, WINDOW),
        outbox.accept([item('u', 'before'), item('u', 'both')], now, WINDOW),
      ]);
      expect(second).toEqual({ accepted: ['b1'], duplicate: ['before', 'b1'], full: [] });
      expect(other).toEqual({ accepted: ['before', 'both'], duplicate: [], full: [] });
      // `both` is new in whichever of the two takes it first, a duplicate in the other.
      expect([...first!.accepted, ...third!.accepted].sort()).toEqual(['a1', 'a2', 'both', 'c1']);
      expect([...first!.duplicate, ...third!.duplicate]).toEqual(['both']);
      expect(await outbox.stats()).toMatchObject({ pending: 8, remembered: 8 });
      // Each is remembered: sent again, every one is a duplicate.
      const again = ['before', 'a1', 'both', 'a2', 'b1', 'c1'];
      expect(await outbox.accept([...again.map((id) => item('t', id)), item('u', 'both')], now + 2, WINDOW)).toEqual({
        accepted: [],
        duplicate: [...again, 'both'],
        full: [],
      });
    }),
  );
}
