/**
 * The outbox and pacer conformance suite: the same cases against every store (memory, SQLite,
 * Redis on Node; Durable Objects in workerd). It imports nothing from Node, so workerd runs it too.
 * Every case uses its own sites and a clock it controls (`now`), based on the real time so a store
 * that also sets real expiries (Redis) agrees.
 */
import { describe, expect, it } from 'vitest';
import type { Outbox, OutboxItem, Pacer } from '../../../src/relay/state/outbox.js';
import { entryShape } from '../../../src/relay/ingest/shapes.js';
import { outboxAcceptCases } from './outbox-accept-cases.js';
import { outboxLeaseCases, type Reads } from './outbox-lease-cases.js';
import { outboxOrderCases } from './outbox-order-cases.js';
import { outboxEraseCases } from './outbox-erase-cases.js';
import { pacerStepCases } from './pacer-step-cases.js';
import { NARROW_MS, QUIET_MS } from '../../../src/relay/state/margin.js';

/** One connection to a store; `another` opens a second one to the same store (another process's view). */
export interface OutboxHandle {
  outbox: Outbox;
  /** a pacer of `rate` calls/s on this connection, sharing its budget with every pacer of the store; `catchUpMs` as in state/pace.ts */
  pacer(rate: number, catchUpMs?: number): Pacer;
  close(): Promise<void>;
  /** what a call costs this connection's store: rows read (SQL), commands run (Redis), entries looked at (memory) */
  reads?: Reads;
}

export interface OutboxTarget {
  /** a new, empty store */
  open(): Promise<OutboxHandle & { another(): Promise<OutboxHandle> }>;
  /** ids the store physically holds (rows, keys), not the gauge: shows expiry happens in the store */
  held?(handle: OutboxHandle): Promise<number>;
  /** items one accept carries where a case fills the store with a backlog (outbox-lease-cases.ts FILL unless given) */
  fill?: number;
}

const WINDOW = 7 * 24 * 3600_000;

export function item(site: string, id: string, overrides: Partial<OutboxItem> = {}): OutboxItem {
  return {
    site,
    id,
    kind: 'activity',
    entry: { activity_id: 'page', fields: { n: id }, created: '2026-11-25T20:00:00.000Z' },
    browser: `b-${id}`,
    visitor: `v-${id}`,
    accepted: 1_764_000_000_000,
    ...overrides,
  };
}

export function outboxSuite(name: string, target: OutboxTarget): void {
  const withStore = (run: (handle: OutboxHandle & { another(): Promise<OutboxHandle> }) => Promise<void>) => async () => {
    const handle = await target.open();
    try {
      await run(handle);
    } finally {
      await handle.close();
    }
  };

  describe(`${name} outbox`, () => {
    it(
      'accepts an id once per site: duplicate at any age within the window, in one call or across calls',
      withStore(async ({ outbox }) => {
        const now = Date.now();
        const uuid = '0b6c4f3e-8a1d-4c2b-9f00-5e6d7c8b9a01';
        expect(await outbox.accept([item('s', 'a'), item('s', uuid), item('s', 'a')], now, WINDOW)).toEqual({
          accepted: ['a', uuid],
          duplicate: ['a'],
          full: [],
        });
        // The same UUID however it is written is the same 16 bytes, so the same id.
        for (const age of [1, 3600_000, 3 * 24 * 3600_000, WINDOW - 1]) {
          expect(await outbox.accept([item('s', 'a'), item('s', uuid.toUpperCase()), item('s', 'b')], now + age, WINDOW)).toEqual({
            accepted: age === 1 ? ['b'] : [],
            duplicate: age === 1 ? ['a', uuid.toUpperCase()] : ['a', uuid.toUpperCase(), 'b'],
            full: [],
          });
        }
        // Ids are per site.
        expect(await outbox.accept([item('other', 'a'), item('other', uuid)], now, WINDOW)).toEqual({ accepted: ['a', uuid], duplicate: [], full: [] });
        expect(await outbox.stats()).toMatchObject({ pending: 5, remembered: 5 });
      }),
    );

    it(
      'forgets an id once its window has passed, in the store itself',
      withStore(async (handle) => {
        const { outbox } = handle;
        const now = Date.now();
        const window = 300;
        const ids = Array.from({ length: 20 }, (_, i) => item('exp', `e${i}`));
        expect((await outbox.accept(ids, now, window)).accepted).toHaveLength(20);
        expect((await outbox.accept(ids.slice(0, 1), now + window - 1, window)).duplicate).toEqual(['e0']);
        expect((await outbox.accept(ids.slice(1, 2), now + window, window)).accepted).toEqual(['e1']);
        // Later acceptances push the expired ids out: what is held follows the window. (In real
        // time too, past the gauge's 1 s granularity: Redis expires keys by its own clock.)
        // The gauge and the store's own keys (where the target can count them) both come down to
        // the one live id; Redis may count an id out a moment before it drops the key.
        await expect
          .poll(
            async () => {
              await outbox.accept([item('exp', 'late')], Date.now() + window, window);
              return [(await outbox.stats()).remembered, target.held ? await target.held(handle) : 1];
            },
            { timeout: 10_000, interval: 100 },
          )
          .toEqual([1, 1]);
      }),
    );

    it(
      'hands each entry on as the JSON it was accepted as, byte for byte, whatever its text holds; a later change to the item does not reach it',
      withStore(async ({ outbox }) => {
        const now = Date.now();
        const odd = {
          activity_id: 'act:cm:"quoted",entry":{}',
          fields: { 'str::email': 'a,"entry":b@x.example', 'str::name': 'é 😀 \u2028\u2029 \ud800 \u0000 \\ </script>' },
          attributes: { 'num:cm:big': 1e21, 'num:cm:small': 5e-324, 'num:cm:sum': 0.1 + 0.2, 'arr:cm:list': [1, {}, [], null, true], '': '' },
          created: '2026-11-25T20:00:00.000Z',
        };
        const items = [
          item('bytes', 'a', { entry: odd, browser: ',"entry":{"x":1}', visitor: 'v"\\' }),
          item('bytes', 'b', { kind: 'merge', entry: { fields: { 'str::email': 'b@x.example' }, ',"entry":': 1 } }),
          item('bytes', 'c'),
        ];
        const texts = items.map((one) => JSON.stringify(one.entry));
        await outbox.accept(items, now, WINDOW);
        (odd.fields as Record<string, string>)['str::email'] = 'changed@x.example';
        const leased = await outbox.lease('one', 10, now, 1000);
        expect(leased.map((one) => one.text)).toEqual(texts);
        expect(leased.map(({ site, id, kind, browser, visitor, accepted }) => ({ site, id, kind, browser, visitor, accepted }))).toEqual(
          items.map(({ site, id, kind, browser, visitor, accepted }) => ({ site, id, kind, browser, visitor, accepted })),
        );
      }),
    );

    it(
      'leases the lowest seqs first, at most max, and never an entry under a live lease',
      withStore(async ({ outbox, another }) => {
        const now = Date.now();
        const items = ['a', 'b', 'c', 'd', 'e'].map((id, i) => item('l', id, { kind: i === 0 ? 'merge' : 'activity' }));
        await outbox.accept(items, now, WINDOW);
        const first = await outbox.lease('one', 3, now, 1000);
        expect(first.map((leased) => leased.id)).toEqual(['a', 'b', 'c']);
        expect(first.map((leased) => leased.attempts)).toEqual([0, 0, 0]);
        const { entry, ...fields } = items[0]!;
        const { shape, ...leased } = first[0]!;
        expect(leased).toEqual({ ...fields, text: JSON.stringify(entry), seq: first[0]!.seq, attempts: 0 });
        // A store that keeps each entry's shape (memory) hands on the entry's own.
        if (shape !== undefined) expect(shape).toBe(entryShape(items[0]!));
        expect(first[1]!.seq).toBeGreaterThan(first[0]!.seq);
        expect(first[2]!.seq).toBeGreaterThan(first[1]!.seq);
        const other = await another();
        try {
          const second = await other.outbox.lease('two', 10, now + 999, 1000);
          expect(second.map((leased) => leased.id)).toEqual(['d', 'e']);
          expect(await other.outbox.lease('three', 10, now + 999, 1000)).toEqual([]);
          // Expired: leased again; leasing alone counts no send (see `sending`).
          const third = await other.outbox.lease('three', 2, now + 1000, 1000);
          expect(third.map((leased) => [leased.id, leased.attempts])).toEqual([
            ['a', 0],
            ['b', 0],
          ]);
          const fourth = await outbox.lease('four', 10, now + 5000, 1000);
          expect(fourth.map((leased) => leased.id)).toEqual(['a', 'b', 'c', 'd', 'e']);
        } finally {
          await other.close();
        }
        expect((await outbox.stats()).pending).toBe(5);
      }),
    );

    it(
      'settles only the owner’s leases: delivered, released (attempts 0, not before), dead; others are skipped and counted',
      withStore(async ({ outbox }) => {
        const now = Date.now();
        await outbox.accept(
          ['a', 'b', 'c', 'd', 'e'].map((id) => item('t', id)),
          now,
          WINDOW,
        );
        const leased = await outbox.lease('one', 5, now, 1000);
        const seq = Object.fromEntries(leased.map((entry) => [entry.id, entry.seq])) as Record<string, number>;
        // One call carries them all.
        expect(
          await outbox.sending(
            'one',
            leased.map((entry) => entry.seq),
            now,
          ),
        ).toHaveLength(5);
        // A stranger settles nothing.
        expect(
          await outbox.settle(
            'stranger',
            { delivered: [seq['a']!], released: [{ seq: seq['b']!, notBefore: now }], dead: [{ seq: seq['c']!, reason: 'x' }] },
            now,
          ),
        ).toEqual({ skipped: 3 });
        // The lease expires and another deliverer takes `a`: the first owner can no longer settle it.
        const retaken = await outbox.lease('two', 1, now + 1000, 10_000);
        expect(retaken.map((entry) => [entry.id, entry.attempts])).toEqual([['a', 1]]);
        expect(
          await outbox.settle(
            'one',
            {
              delivered: [seq['a']!, seq['b']!],
              released: [{ seq: seq['c']!, notBefore: now + 3000 }],
              dead: [{ seq: seq['d']!, reason: 'refused', status: 400 }],
            },
            now + 1001,
          ),
        ).toEqual({ skipped: 1 });
        expect(await outbox.stats()).toMatchObject({ pending: 3, dead: 1 });
        // `c` waits for its notBefore, then goes with attempts back to 0; `e`'s lease expired.
        const early = await outbox.lease('three', 10, now + 2500, 1000);
        expect(early.map((entry) => [entry.id, entry.attempts])).toEqual([['e', 1]]);
        const later = await outbox.lease('three', 10, now + 3000, 1000);
        expect(later.map((entry) => [entry.id, entry.attempts])).toEqual([['c', 0]]);
        // Settling what is not in the outbox (delivered twice, never existed) is skipped too.
        expect(await outbox.settle('two', { delivered: [seq['b']!, 999_999], released: [], dead: [] }, now + 3000)).toEqual({ skipped: 2 });
        // Delivered ids stay remembered: never accepted again within the window.
        expect((await outbox.accept([item('t', 'b')], now + 4000, WINDOW)).duplicate).toEqual(['b']);
      }),
    );

    it(
      'counts a send when a call starts, not at lease: only on the owner’s live leases, and it stays until settled (or released as tried)',
      withStore(async ({ outbox, another }) => {
        const now = Date.now();
        await outbox.accept(
          ['a', 'b', 'c', 'd'].map((id) => item('m', id)),
          now,
          WINDOW,
        );
        const leased = await outbox.lease('one', 10, now, 1000);
        const seq = Object.fromEntries(leased.map((entry) => [entry.id, entry.seq])) as Record<string, number>;
        // One call carrying `b` and `c` goes; `a` and `d` stay leased, never sent.
        expect(await outbox.sending('one', [seq['c']!, seq['b']!], now + 10)).toEqual([seq['c']!, seq['b']!]);
        // A stranger marks nothing: not even an entry it names twice, nor one that is not there.
        const other = await another();
        try {
          expect(await other.outbox.sending('stranger', [seq['a']!, seq['a']!, 999_999], now + 20)).toEqual([]);
          // The owner died: its lease runs out. What it never sent comes back with attempts 0;
          // what its call carried comes back with attempts 1 (the outcome is unknown).
          const again = await other.outbox.lease('two', 10, now + 1000, 1000);
          expect(again.map((entry) => [entry.id, entry.attempts])).toEqual([
            ['a', 0],
            ['b', 1],
            ['c', 1],
            ['d', 0],
          ]);
        } finally {
          await other.close();
        }
        // The first owner's lease ran out and was taken: it can mark nothing any more.
        expect(await outbox.sending('one', [seq['a']!, seq['d']!], now + 1001)).toEqual([]);
        // Nor can the new owner once its own lease has run out (no call outlives its lease).
        expect(await outbox.sending('two', [seq['a']!], now + 2000)).toEqual([]);
        const third = await outbox.lease('three', 10, now + 2000, 1000);
        expect(third.map((entry) => [entry.id, entry.attempts])).toEqual([
          ['a', 0],
          ['b', 1],
          ['c', 1],
          ['d', 0],
        ]);
        // Marked twice (two calls started, neither settled): 2. Released (known not applied): back to 0.
        expect(await outbox.sending('three', [seq['b']!], now + 2001)).toEqual([seq['b']!]);
        await outbox.settle('three', { delivered: [], released: [{ seq: seq['c']!, notBefore: now + 2001 }], dead: [] }, now + 2001);
        const fourth = await outbox.lease('four', 10, now + 3000, 1000);
        expect(fourth.map((entry) => [entry.id, entry.attempts])).toEqual([
          ['a', 0],
          ['b', 2],
          ['c', 0],
          ['d', 0],
        ]);
        // Released as `tried` (an ambiguous call to send again): its sends stay counted, and one more is added.
        expect(await outbox.sending('four', [seq['b']!], now + 3001)).toEqual([seq['b']!]);
        await outbox.settle('four', { delivered: [], released: [{ seq: seq['b']!, notBefore: now + 3001, tried: true }], dead: [] }, now + 3001);
        const fifth = await outbox.lease('five', 10, now + 4000, 1000);
        expect(fifth.map((entry) => [entry.id, entry.attempts])).toEqual([
          ['a', 0],
          ['b', 3],
          ['c', 0],
          ['d', 0],
        ]);
      }),
    );

    it(
      'keeps dead letters with their reason, lists them oldest first, retries and drops them',
      withStore(async ({ outbox }) => {
        const now = Date.now();
        await outbox.accept([item('d1', 'a'), item('d2', 'b'), item('d1', 'c'), item('d1', 'keep')], now, WINDOW);
        const leased = await outbox.lease('me', 10, now, 1000);
        const [a, b, c] = leased;
        await outbox.settle(
          'me',
          {
            delivered: [],
            released: [],
            dead: [
              { seq: c!.seq, reason: 'ambiguous' },
              { seq: a!.seq, reason: 'invalid_field', status: 400 },
              { seq: b!.seq, reason: 'invalid_field', status: 422 },
            ],
          },
          now + 5,
        );
        const letters = await outbox.deadLetters();
        expect(letters.map((letter) => [letter.id, letter.site, letter.reason, letter.status, letter.failed])).toEqual([
          ['a', 'd1', 'invalid_field', 400, now + 5],
          ['b', 'd2', 'invalid_field', 422, now + 5],
          ['c', 'd1', 'ambiguous', undefined, now + 5],
        ]);
        expect(letters[0]).toMatchObject(item('d1', 'a'));
        expect((await outbox.deadLetters({ site: 'd1' })).map((letter) => letter.id)).toEqual(['a', 'c']);
        expect((await outbox.deadLetters({ limit: 1 })).map((letter) => letter.id)).toEqual(['a']);
        // A dead letter is never leased; retried, it goes again with attempts 0 in seq order.
        const kept = await outbox.lease('me', 10, now + 2000, 1000);
        expect(kept).toMatchObject([{ id: 'keep' }]);
        expect(await outbox.sending('me', [kept[0]!.seq], now + 2000)).toEqual([kept[0]!.seq]);
        expect(await outbox.retryDead([c!.seq, 424_242], now + 2000)).toBe(1);
        expect(await outbox.retryDead([c!.seq], now + 2000)).toBe(0);
        expect((await outbox.lease('me', 10, now + 4000, 1000)).map((entry) => [entry.id, entry.attempts])).toEqual([
          ['c', 0],
          ['keep', 1],
        ]);
        expect(await outbox.dropDead([a!.seq])).toBe(1);
        expect((await outbox.deadLetters()).map((letter) => letter.id)).toEqual(['b']);
        expect(await outbox.retryDead(undefined, now + 5000)).toBe(1);
        expect(await outbox.stats()).toMatchObject({ pending: 3, dead: 0 });
        const again = await outbox.lease('me', 10, now + 9000, 1000);
        await outbox.settle('me', { delivered: [], released: [], dead: again.map((entry) => ({ seq: entry.seq, reason: 'gone' })) }, now + 9000);
        expect(await outbox.dropDead(undefined)).toBe(3);
        expect(await outbox.stats()).toMatchObject({ pending: 0, dead: 0 });
      }),
    );

    it(
      'leases in turns: one run of up to 10 entries per site, each site’s turn to its visitors in turn, each visitor’s in seq order',
      withStore(async ({ outbox }) => {
        const now = Date.now();
        const from = (site: string, visitor: string, count: number) =>
          Array.from({ length: count }, (_, i) => item(site, `${visitor}-${i}`, { visitor, browser: visitor }));
        // One address floods its site first; then another site's three visitors, and a third site.
        await outbox.accept(from('flood', 'f', 100), now, WINDOW);
        for (const visitor of ['a1', 'a2', 'a3']) await outbox.accept(from('a', visitor, 2), now, WINDOW);
        await outbox.accept(from('b', 'b1', 2), now, WINDOW);
        const leased = await outbox.lease('one', 40, now, 1000);
        const count = (key: 'site' | 'visitor') =>
          leased.reduce((counts, entry) => counts.set(entry[key], (counts.get(entry[key]) ?? 0) + 1), new Map<string, number>());
        // Turns of a run (up to 10 of a visitor's entries, state/fair.ts RUN): flood, a1, b1; flood, a2; flood, a3; flood (2, the lease full).
        expect(Object.fromEntries(count('site'))).toEqual({ flood: 32, a: 6, b: 2 });
        expect(Object.fromEntries(count('visitor'))).toEqual({ f: 32, a1: 2, a2: 2, a3: 2, b1: 2 });
        // Each visitor's oldest first, and the lease in seq order.
        expect(leased.filter((entry) => entry.visitor === 'f').map((entry) => entry.id)).toEqual(Array.from({ length: 32 }, (_, i) => `f-${i}`));
        expect(leased.map((entry) => entry.seq)).toEqual(leased.map((entry) => entry.seq).sort((x, y) => x - y));
        // Within one site, too: a flood from one address takes one turn (a run) in each round, not the lease.
        await outbox.accept(from('one', 'loud', 50), now, WINDOW);
        await outbox.accept([...from('one', 'q1', 1), ...from('one', 'q2', 1)], now, WINDOW);
        const next = await outbox.lease('one', 60, now, 1000);
        expect(next.filter((entry) => entry.site === 'one').map((entry) => entry.id)).toEqual(expect.arrayContaining(['q1-0', 'q2-0']));
        // Whatever is left goes in later leases: nothing is skipped for good.
        const rest = await outbox.lease('one', 1000, now, 1000);
        expect(leased.length + next.length + rest.length).toBe(100 + 6 + 2 + 52);
      }),
    );

    it(
      'takes a visitor’s next run only after the others’ across leases: a visitor a lease took from goes behind those waiting',
      withStore(async ({ outbox }) => {
        const now = Date.now();
        for (const visitor of ['x', 'y', 'z'])
          await outbox.accept(
            Array.from({ length: 25 }, (_, i) => item('turns', `${visitor}-${i}`, { visitor, browser: visitor })),
            now,
            WINDOW,
          );
        // Each lease of 10 takes one run (state/fair.ts RUN); a lane that kept its place would give x's every time.
        const runs: string[] = [];
        for (let lease = 0; lease < 6; lease++) {
          const leased = await outbox.lease(`l${lease}`, 10, now + 1 + lease, 1000);
          runs.push([...new Set(leased.map((entry) => entry.visitor))].join('+'));
        }
        expect(runs).toEqual(['x', 'y', 'z', 'x', 'y', 'z']);
      }),
    );

    it(
      'holds at most its limits per visitor, per site and in all: past them an id is full, neither stored nor remembered',
      withStore(async ({ outbox }) => {
        const now = Date.now();
        const limits = { visitor: 3, site: 5, total: 7, dead: 100 };
        const take = (site: string, visitor: string, ids: string[], at = now) =>
          outbox.accept(
            ids.map((id) => item(site, id, { visitor })),
            at,
            WINDOW,
            limits,
          );
        expect(await take('s', 'v1', ['a', 'b', 'c', 'd', 'a'])).toEqual({ accepted: ['a', 'b', 'c'], duplicate: ['a'], full: ['d'] });
        // The site's limit: another visitor of it gets the two left.
        expect(await take('s', 'v2', ['e', 'f', 'g'])).toEqual({ accepted: ['e', 'f'], duplicate: [], full: ['g'] });
        // The whole outbox's: another site gets the two left of 7.
        expect(await take('t', 'w1', ['h', 'i', 'j'])).toEqual({ accepted: ['h', 'i'], duplicate: [], full: ['j'] });
        expect(await outbox.stats()).toMatchObject({ pending: 7 });
        // Delivered entries make room; a full id was not remembered, so it is taken now, once.
        const leased = await outbox.lease('me', 2, now, 1000);
        await outbox.settle('me', { delivered: leased.map((entry) => entry.seq), released: [], dead: [] }, now);
        const again = await take('t', 'w1', ['j', 'j'], now + 1);
        expect(again).toEqual({ accepted: ['j'], duplicate: ['j'], full: [] });
        expect(await outbox.stats()).toMatchObject({ pending: 6 });
      }),
    );

    it(
      'keeps at most the limit of dead letters and only for the window: what expires or is cut is counted',
      withStore(async ({ outbox }) => {
        const now = Date.now();
        const window = 60_000;
        const limits = { visitor: 100, site: 100, total: 100, dead: 3 };
        await outbox.accept(
          ['a', 'b', 'c', 'd', 'e'].map((id) => item('dl', id)),
          now,
          window,
          limits,
        );
        const leased = await outbox.lease('me', 10, now, 1000);
        const [first, ...later] = leased;
        await outbox.settle('me', { delivered: [], released: [], dead: [{ seq: first!.seq, reason: 'x' }] }, now);
        await outbox.settle('me', { delivered: [], released: [], dead: later.map((entry) => ({ seq: entry.seq, reason: 'x' })) }, now + 1000);
        expect(await outbox.stats()).toMatchObject({ dead: 5, expired: 0, cut: 0 });
        // The next accept cuts the oldest two: 3 kept, 2 counted as cut.
        await outbox.accept([item('dl', 'f')], now + 2000, window, limits);
        expect((await outbox.deadLetters()).map((letter) => letter.id)).toEqual(['c', 'd', 'e']);
        expect(await outbox.stats()).toMatchObject({ dead: 3, expired: 0, cut: 2 });
        // Their window passes: gone, and counted as expired.
        await outbox.accept([], now + 1000 + window, window, limits);
        expect(await outbox.deadLetters()).toEqual([]);
        expect(await outbox.stats()).toMatchObject({ pending: 1, dead: 0, expired: 3, cut: 2 });
      }),
    );

    it(
      'lets one deliverer lead until its lock expires, renewable only by itself',
      withStore(async ({ outbox, another }) => {
        const now = Date.now();
        const other = await another();
        try {
          expect(await outbox.lead('one', now, 1000)).toBe(true);
          expect(await other.outbox.lead('two', now + 500, 1000)).toBe(false);
          expect(await outbox.lead('one', now + 900, 1000)).toBe(true);
          expect(await other.outbox.lead('two', now + 1500, 1000)).toBe(false);
          expect(await other.outbox.lead('two', now + 1900, 1000)).toBe(true);
          expect(await outbox.lead('one', now + 2000, 1000)).toBe(false);
        } finally {
          await other.close();
        }
      }),
    );

    outboxAcceptCases(withStore, item);
    outboxOrderCases(withStore, item);
    outboxLeaseCases(withStore, item, target.fill);
    outboxEraseCases(withStore, item);
  });

  describe(`${name} pacer`, () => {
    pacerStepCases(withStore, item);

    it(
      'grants N calls a second, spaced evenly, across several instances sharing the store',
      withStore(async ({ pacer, another }) => {
        const others = [await another(), await another()];
        try {
          const pacers = [pacer(20), others[0]!.pacer(20), others[1]!.pacer(20)];
          const start = Date.now() + 10_000;
          const asks = [start, start, start];
          const granted: number[] = [];
          // Each instance asks again when told; the store decides: 20 a second, 50 ms apart.
          for (let t = start; t < start + 1000; t++) {
            for (const [i, p] of pacers.entries()) {
              if (asks[i]! > t) continue;
              const wait = await p.take(t, 'deliver');
              if (wait === 0) {
                granted.push(t);
                asks[i] = t + 1;
              } else asks[i] = t + wait;
            }
          }
          expect(granted).toHaveLength(20);
          for (let i = 1; i < granted.length; i++) expect(granted[i]! - granted[i - 1]!).toBeGreaterThanOrEqual(50);
        } finally {
          for (const other of others) await other.close();
        }
      }),
    );

    it(
      'counts proxy and deliver calls in one window: a proxy call takes the next free place, a deliver call leaves only where it fits',
      withStore(async ({ pacer, another }) => {
        const other = await another();
        try {
          const deliver = pacer(10, 1_000);
          const proxy = other.pacer(10, 1_000);
          const now = Date.now() + 10_000;
          // Ten deliver calls leave 10 ms apart: the window (1,030 ms) is full until the first of them is out of it.
          for (let i = 0; i < 10; i++) expect(await deliver.leave!(now + i * 10, 0)).toBe(0);
          // A proxy call asked then is granted the next free place: 1,030 ms after the first call, 930 ms from now.
          expect(await proxy.take(now + 100, 'proxy')).toBe(-930);
          // A deliver call fits only once the second call is out of the window: with the proxy call, eleven would be in one.
          expect(await deliver.leave!(now + 200, 0)).toBe(840);
          expect(await deliver.leave!(now + 200, 840)).toBe(0);
          // More proxy calls take the following places, each within 2 s; past that one is answered the wait, positive, and takes nothing.
          const granted: number[] = [];
          for (let wait = -1; wait < 0 && granted.length < 30; ) {
            wait = await proxy.take(now + 100, 'proxy');
            if (wait < 0) granted.push(-wait);
            else {
              expect(wait).toBeGreaterThan(2_000);
              expect(await proxy.take(now + 100, 'proxy')).toBe(wait);
            }
          }
          // The first calls' places free 10 ms apart: 8 more proxy calls from 1,050 ms after the first call, then
          // 5 from 2,060 ms (a window after the first proxy call) up to 2 s from when they asked.
          expect(granted).toEqual([950, 960, 970, 980, 990, 1000, 1010, 1020, 1960, 1970, 1980, 1990, 2000]);
          expect(Math.max(...granted)).toBeLessThanOrEqual(2_000);
        } finally {
          await other.close();
        }
      }),
    );

    it(
      'moves the count of a deliver call that did not leave when it was counted ahead: no place is lost',
      withStore(async ({ pacer }) => {
        const deliver = pacer(10);
        const now = Date.now() + 10_000;
        // Counted for 500 ms from now, then held 100 ms longer by its spacer: counted again, moved.
        expect(await deliver.leave!(now, 500)).toBe(0);
        expect(await deliver.leave!(now + 500, 100, true)).toBe(0);
        // Nine more fit in its window (ten in all), not eight: the first count is gone.
        for (let i = 1; i <= 9; i++) expect(await deliver.leave!(now + 600 + i, 0)).toBe(0);
        expect(await deliver.leave!(now + 700, 0)).toBe(930);
      }),
    );

    it(
      'pushes the deliver schedule on by the slots proxy calls took: deliveries wait them out',
      withStore(async ({ pacer, another }) => {
        const other = await another();
        try {
          const deliver = pacer(10);
          const proxy = other.pacer(10);
          const now = Date.now() + 10_000;
          expect(await deliver.take(now, 'deliver')).toBe(0);
          for (let i = 0; i < 5; i++) expect(await proxy.take(now + 1, 'proxy')).toBe(0);
          // One delivery and five proxy calls at 100 ms each: the next delivery waits 600 ms.
          expect(await deliver.take(now + 1, 'deliver')).toBe(599);
          expect(await deliver.take(now + 599, 'deliver')).toBe(1);
          expect(await deliver.take(now + 600, 'deliver')).toBe(0);
          expect(await deliver.take(now + 600, 'deliver')).toBe(100);
        } finally {
          await other.close();
        }
      }),
    );

    it(
      'lets a deliverer that asks late catch up, at most `catchUpMs` of the schedule; a proxy call starts it again from now',
      withStore(async ({ pacer, another }) => {
        const other = await another();
        try {
          const deliver = pacer(10, 1_000);
          const now = Date.now() + 10_000;
          const grants = async (at: number) => {
            let granted = 0;
            while ((await deliver.take(at, 'deliver')) === 0) granted++;
            return granted;
          };
          // Idle for long: the call asked for now and the window's worth of slots missed, then the schedule (100 ms apart) holds.
          expect(await grants(now)).toBe(11);
          expect(await deliver.take(now, 'deliver')).toBe(100);
          // Asked 350 ms late: the slots of the 350 ms missed are granted now, not lost.
          expect(await grants(now + 450)).toBe(4);
          expect(await deliver.take(now + 450, 'deliver')).toBe(50);
          // A proxy call goes first and pushes the schedule on from now: no catching up past it.
          expect(await other.pacer(10, 1_000).take(now + 2_000, 'proxy')).toBe(0);
          expect(await grants(now + 2_000)).toBe(0);
          expect(await deliver.take(now + 2_000, 'deliver')).toBe(100);
        } finally {
          await other.close();
        }
      }),
    );

    it(
      "widens the shared window with the platform's 429s, once a hold, up to 15%, for every relay of the store; a quiet stretch narrows it back",
      withStore(async ({ pacer, another }) => {
        const other = await another();
        try {
          const deliver = pacer(10, 1_000);
          /** When an eleventh call would fit after ten deliver calls leaving 10 ms apart from `at`: the window's length less 100 ms. */
          const eleventh = async (at: number) => {
            for (let i = 0; i < 10; i++) expect(await deliver.leave!(at + i * 10, 0)).toBe(0);
            return deliver.leave!(at + 100, 0);
          };
          let t = Date.now() + 10_000;
          // No 429 yet: the base margin, 3% (1,030 ms).
          expect(await eleventh(t)).toBe(930);
          // Another relay's call is answered 429 (held 1 s): the margin doubles to 6%, for this relay too;
          // a second 429 of the same moment (a call already on its way) does not widen it again.
          t += 2_000;
          await other.pacer(10).hold(t + 1_000, t);
          await other.pacer(10).hold(t + 1_000, t + 50);
          t += 1_000;
          expect(await eleventh(t)).toBe(960);
          // A proxy call counts in the same wider window: after ten calls, the next place is 1,060 ms after the first.
          t += 2_000;
          for (let i = 0; i < 10; i++) expect(await deliver.leave!(t + i * 10, 0)).toBe(0);
          expect(await other.pacer(10, 1_000).take(t + 100, 'proxy')).toBe(-960);
          // A 429 after the hold ended widens it again (12%), and again up to 15% at most.
          t += 3_000;
          await pacer(10).hold(t + 1_000, t);
          t += 1_000;
          expect(await eleventh(t)).toBe(1_020);
          t += 2_000;
          await pacer(10).hold(t + 1_000, t);
          t += 1_000;
          expect(await eleventh(t)).toBe(1_050);
          // No 429 for a quiet stretch (5 minutes): it holds, then narrows a point each 20 s, to 10% after 5 points, 3% after 12.
          const widened = t - 1_000;
          expect(await eleventh(widened + QUIET_MS)).toBe(1_050);
          expect(await eleventh(widened + QUIET_MS + 5 * NARROW_MS)).toBe(1_000);
          expect(await eleventh(widened + QUIET_MS + 12 * NARROW_MS)).toBe(930);
          expect(await eleventh(widened + 3_600_000)).toBe(930);
        } finally {
          await other.close();
        }
      }),
    );

    it(
      'holds every call, proxy included, until the time the platform asked for',
      withStore(async ({ pacer, another }) => {
        const other = await another();
        try {
          const now = Date.now() + 10_000;
          await other.pacer(10).hold(now + 3000, now);
          expect(await pacer(10).take(now, 'deliver')).toBe(3000);
          expect(await pacer(10).take(now + 1000, 'proxy')).toBe(2000);
          // An earlier hold never shortens a later one.
          await pacer(10).hold(now + 1000, now);
          expect(await other.pacer(10).take(now + 2999, 'deliver')).toBe(1);
          expect(await other.pacer(10).take(now + 3000, 'deliver')).toBe(0);
        } finally {
          await other.close();
        }
      }),
    );
  });
}
