/**
 * Erasure and the suppression list (outbox-suite.ts runs these on every store: memory, SQLite,
 * Redis, Durable Objects): a person's waiting entries and dead letters go, whatever case their
 * email is in, nobody else's do, an entry under a live lease is left and counted, and what the
 * dropped entries held (an identify before its browser's tracks) is ready again.
 */
import { expect, it } from 'vitest';
import type { Leased, Outbox, OutboxItem } from '../../../src/relay/state/outbox.js';
import { personHash, personOf } from '../../../src/relay/state/erase.js';

type Handle = { outbox: Outbox; another(): Promise<{ outbox: Outbox; close(): Promise<void> }> };
type WithStore = (run: (handle: Handle) => Promise<void>) => () => Promise<void>;
type Item = (site: string, id: string, overrides?: Partial<OutboxItem>) => OutboxItem;

const WINDOW = 7 * 24 * 3600_000;

export function outboxEraseCases(withStore: WithStore, item: Item): void {
  const ids = (leased: readonly Leased[]) => leased.map((entry) => entry.id).sort();
  const of = (site: string, id: string, fields: Record<string, string>, overrides: Partial<OutboxItem> = {}) =>
    item(site, id, { entry: { activity_id: 'page', fields }, ...overrides });
  const ann = personOf('email', ' Ann@Example.com ');

  it(
    "erases a person's waiting entries and dead letters (any case of the email), leaves a live lease's and everyone else's, and frees what their identify held",
    withStore(async ({ outbox }) => {
      const now = Date.now();
      // Dead letters (Ann's and Bob's), and one of Ann's under a live lease.
      await outbox.accept(
        [
          of('er', 'd-ann', { 'str::email': 'ANN@example.com' }),
          of('er', 'd-bob', { 'str::email': 'bob@example.com' }),
          of('er', 'live', { 'str::email': 'ann@example.com' }),
        ],
        now,
        WINDOW,
      );
      const first = await outbox.lease('one', 10, now, 1000);
      expect(ids(first)).toEqual(['d-ann', 'd-bob', 'live']);
      const seq = (id: string) => first.find((entry) => entry.id === id)!.seq;
      await outbox.settle(
        'one',
        {
          delivered: [],
          released: [],
          dead: [
            { seq: seq('d-ann'), reason: 'refused' },
            { seq: seq('d-bob'), reason: 'refused' },
          ],
        },
        now,
      );
      // Waiting: Ann's identify and the track it holds; Carl's track held behind Ann's identify on a shared browser; Bob; Ann elsewhere and by external id.
      await outbox.accept(
        [
          of('er', 'm-ann', { 'str::email': 'Ann@Example.com' }, { kind: 'merge', browser: 'shared' }),
          of('er', 't-ann', { 'str::email': 'ann@example.com' }, { browser: 'shared' }),
          of('er', 't-carl', { 'str::email': 'carl@example.com' }, { browser: 'shared' }),
          of('er', 't-bob', { 'str::email': 'bob@example.com' }),
          of('er2', 'other-site', { 'str::email': 'ann@example.com' }),
          of('er', 'by-ei', { 'str::ei': 'ann-1' }),
        ],
        now,
        WINDOW,
      );
      expect(await outbox.stats()).toMatchObject({ pending: 7, dead: 2 });

      // One site: Ann's two waiting there and her dead letter; the leased one left and counted.
      expect(await outbox.erase(ann, 'er', now + 1)).toEqual({ waiting: 2, dead: 1, inFlight: 1 });
      expect(await outbox.stats()).toMatchObject({ pending: 5, dead: 1 });
      expect((await outbox.deadLetters()).map((letter) => letter.id)).toEqual(['d-bob']);
      // Every site; then by external id.
      expect(await outbox.erase(ann, undefined, now + 2)).toEqual({ waiting: 1, dead: 0, inFlight: 1 });
      expect(await outbox.erase(personOf('external_id', 'ann-1'), undefined, now + 3)).toEqual({ waiting: 1, dead: 0, inFlight: 0 });

      // Carl's track, held behind Ann's identify, is ready now; the live lease is still its owner's.
      const next = await outbox.lease('two', 10, now + 4, 1000);
      expect(ids(next)).toEqual(['t-bob', 't-carl']);
      // Once the lease has run out, the entry goes too, and its old owner's settle skips it.
      expect(await outbox.erase(ann, undefined, now + 1001)).toEqual({ waiting: 1, dead: 0, inFlight: 0 });
      expect(await outbox.settle('one', { delivered: [seq('live')], released: [], dead: [] }, now + 1002)).toEqual({ skipped: 1 });
      expect(await outbox.settle('two', { delivered: next.map((entry) => entry.seq), released: [], dead: [] }, now + 1003)).toEqual({ skipped: 0 });
      expect(await outbox.stats()).toMatchObject({ pending: 0, dead: 1 });
      expect(await outbox.lease('three', 10, now + 5000, 1000)).toEqual([]);
      // Nobody of that name is left: a second erasure finds nothing.
      expect(await outbox.erase(ann, undefined, now + 5001)).toEqual({ waiting: 0, dead: 0, inFlight: 0 });
    }),
  );

  it(
    'keeps the suppression list for every connection until each row ends, a later end winning',
    withStore(async ({ outbox, another }) => {
      const now = Date.now();
      const hash = personHash(ann);
      expect(hash).toMatch(/^[0-9a-f]{64}$/);
      expect(personHash(personOf('email', 'ann@example.com'))).toBe(hash);
      await outbox.suppress([{ site: '', hash }], now + 10_000, now);
      await outbox.suppress([{ site: 'er', hash: 'b'.repeat(64) }], now + 5_000, now);
      const other = await another();
      try {
        const sorted = async (at: number) => (await other.outbox.suppressed(at)).sort((a, b) => a.site.localeCompare(b.site));
        expect(await sorted(now + 1)).toEqual([
          { site: '', hash },
          { site: 'er', hash: 'b'.repeat(64) },
        ]);
        // A shorter suppression of a row kept does not shorten it; a longer one lengthens it.
        await other.outbox.suppress([{ site: 'er', hash: 'b'.repeat(64) }], now + 1_000, now + 2);
        await other.outbox.suppress([{ site: '', hash }], now + 20_000, now + 2);
        expect(await sorted(now + 4_999)).toHaveLength(2);
        expect(await sorted(now + 5_000)).toEqual([{ site: '', hash }]);
        expect(await sorted(now + 15_000)).toEqual([{ site: '', hash }]);
        expect(await outbox.suppressed(now + 20_000)).toEqual([]);
      } finally {
        await other.close();
      }
    }),
  );
}
