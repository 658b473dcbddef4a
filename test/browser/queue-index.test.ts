import { createStore, get, set } from 'idb-keyval';
import { describe, expect, it, vi } from 'vitest';
import { type Entry, idbStore, memoryStore, type Store } from '../../src/browser/index.js';
import { createQueue } from '../../src/browser/queue.js';
import { ann, fakeRelay, queued, siteRows, tracker } from './support.js';

/** The IndexedDB store with each operation counted. */
function countingStore() {
  const inner = idbStore('pk_test');
  const calls = { all: 0, write: 0, clear: 0 };
  const store: Store = {
    all: () => {
      calls.all++;
      return inner.all();
    },
    write: (changes) => {
      calls.write++;
      return inner.write(changes);
    },
    clear: () => {
      calls.clear++;
      return inner.clear();
    },
  };
  return { store, calls };
}

const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));
const meta = () => get<{ a: string; q?: string }>(['pk_test', 'meta'], createStore('cdp-edge', 'queue'));

describe('the queue index', () => {
  it('an anonymous visitor with 1,000 held items: each track is one write, never a full read or a send', async () => {
    const { store, calls } = countingStore();
    const relay = fakeRelay();
    const { t } = await tracker({ store, flushInterval: 0 }, relay);
    for (let i = 0; i < 1000; i++) void t.track('act:cm:held', { 'int:cm:i': i });
    await t.track('act:cm:held');
    const before = { ...calls };
    for (let i = 0; i < 50; i++) {
      await t.track('act:cm:more');
      await nextTask();
    }
    expect(calls.all - before.all).toBe(0);
    expect(calls.write - before.write).toBe(50);
    expect(relay.sent).toHaveLength(0);
    // At most maxItems stay, oldest dropped.
    expect(await queued()).toHaveLength(1000);
    // Identify releases them: everything goes (the identify counts in the cap), in batches of 100, identify first.
    await t.identify(ann);
    await t.flush();
    expect(relay.items()).toHaveLength(1000);
    expect(relay.items()[0]!.type).toBe('identify');
    expect(relay.sent.length).toBe(10);
    expect(await queued()).toEqual([]);
  });

  it('a tracker loaded over 1,000 held items reads the store once, not per call', async () => {
    const first = await tracker({ consent: 'granted' });
    await Promise.all(Array.from({ length: 1000 }, (_, i) => first.t.track('act:cm:old', { 'int:cm:i': i })));
    const { store, calls } = countingStore();
    const { t } = await tracker({ store, flushInterval: 0 });
    const afterLoad = calls.all;
    for (let i = 0; i < 20; i++) {
      await t.track('act:cm:new');
      await nextTask();
    }
    expect(afterLoad).toBe(1);
    expect(calls.all).toBe(1);
  });

  it('writes made while a transaction is in flight share the next one', async () => {
    const inner = idbStore('pk_test');
    let puts = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const store: Store = {
      ...inner,
      write: async (changes) => {
        // Writes of queued items (not of `meta` or `lock`); the first one hangs until released.
        if (changes.some(([key]) => key !== 'meta' && key !== 'lock') && ++puts === 1) await gate;
        return inner.write(changes);
      },
    };
    const { t } = await tracker({ store, consent: 'store-only' });
    const first = t.track('act:cm:a');
    // Gathered for a few milliseconds, then written.
    await vi.waitFor(() => expect(puts).toBe(1), { timeout: 5_000 });
    const rest = Array.from({ length: 30 }, () => t.track('act:cm:b'));
    for (let i = 0; i < 5; i++) await nextTask();
    release();
    await Promise.all([first, ...rest]);
    expect(puts).toBe(2);
    expect(await queued()).toHaveLength(31);
  });

  it('emits queue, send and result for the page’s own code', async () => {
    const relay = fakeRelay((sent) => ({ status: { [sent.body.batch[1]!.id]: 'rejected' } }));
    const { t, events } = await tracker({}, relay);
    await t.identify(ann);
    await t.track('act:cm:bad');
    await t.flush();
    expect(events.queue.map((e) => e.item.type)).toEqual(['identify', 'track']);
    expect(events.send).toEqual([{ items: relay.items(), beacon: false }]);
    expect(events.result.map((e) => e.status)).toEqual(['accepted', 'rejected']);
  });
});

describe('the queue id', () => {
  it('every batch carries one stable id, shared by tabs and kept through reload, reset, identify and consent', async () => {
    const relay = fakeRelay();
    const a = await tracker({}, relay);
    const b = await tracker({}, relay);
    await a.t.identify(ann);
    await a.t.flush();
    await b.t.reset();
    await b.t.consent('denied');
    await b.t.consent('granted');
    await b.t.identify({ 'str::email': 'bob@example.com' });
    await b.t.flush();
    const reloaded = await tracker({}, relay);
    await reloaded.t.track('act:cm:after');
    await reloaded.t.flush();
    const ids = new Set(relay.sent.map((s) => (s.body as { queue?: string }).queue));
    expect(relay.sent.length).toBeGreaterThanOrEqual(3);
    expect([...ids]).toEqual([(await meta())!.q]);
    expect([...ids][0]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a queue stored by an older snippet (meta without an id) gets one on load and keeps its items', async () => {
    const db = createStore('cdp-edge', 'queue');
    await set(['pk_test', 'meta'], { a: 'old-anonymous', m: { 'old-anonymous': { p: ann } } }, db);
    const item = { id: 'old-1', type: 'track', ts: new Date().toISOString(), activity_id: 'act:cm:old' };
    await set(['pk_test', 'old-1'], [{ item, a: 'old-anonymous', n: Date.now() * 1000 }], db);
    const relay = fakeRelay();
    const { t } = await tracker({}, relay);
    await t.flush();
    const stored = await meta();
    expect(stored).toMatchObject({ a: 'old-anonymous' });
    expect(stored!.q).toMatch(/^[0-9a-f-]{36}$/);
    expect(relay.items()).toMatchObject([{ id: 'old-1', person: ann }]);
    expect((relay.sent[0]!.body as { queue?: string }).queue).toBe(stored!.q);
  });
});

/** The snippet's rows as stored: key and value, without `meta`. */
const rows = async () => (await siteRows()).filter(([key]) => key !== 'meta');
const microtasks = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('stored rows', () => {
  it('a burst of calls is one row and one write; the cap takes the oldest out of their row, the rest stay in it', async () => {
    const { store, calls } = countingStore();
    const { t, events } = await tracker({ store, maxItems: 40 });
    const before = calls.write;
    await Promise.all(Array.from({ length: 30 }, (_, i) => t.track('act:cm:burst', { 'int:cm:i': i })));
    expect(calls.write - before).toBe(1);
    expect((await rows()).map(([, value]) => (value as unknown[]).length)).toEqual([30]);
    await Promise.all(Array.from({ length: 20 }, (_, i) => t.track('act:cm:burst', { 'int:cm:i': 30 + i })));
    expect(events.drop.map((d) => d.reason)).toEqual(Array(10).fill('cap'));
    expect((await rows()).map(([, value]) => (value as unknown[]).length).sort()).toEqual([20, 20]);
    const left = (await queued()).map((e) => (e.item as unknown as { attributes: { 'int:cm:i': number } }).attributes['int:cm:i']);
    expect(left.sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => 10 + i));
  });

  it('a visible page gathers writes for a few milliseconds; a hidden one, or one being hidden, writes at once', async () => {
    const { store, calls } = countingStore();
    const { t } = await tracker({ store, consent: 'store-only' });
    const visible = calls.write;
    const first = t.track('act:cm:visible');
    await microtasks();
    expect(calls.write).toBe(visible);
    await first;
    expect(calls.write).toBe(visible + 1);

    // The page is being hidden: what gathers is written now, not after the delay.
    const leaving = t.track('act:cm:leaving');
    await microtasks();
    dispatchEvent(new Event('pagehide'));
    expect(calls.write).toBe(visible + 2);
    await leaving;

    const state = vi.spyOn(document, 'visibilityState', 'get').mockReturnValue('hidden');
    try {
      void t.track('act:cm:hidden');
      await microtasks();
      expect(calls.write).toBe(visible + 3);
    } finally {
      state.mockRestore();
    }
  });
});

describe('a full read beside this page’s own writes', () => {
  const entry = (id: string, n: number): Entry => ({ item: { id, type: 'identify', ts: new Date().toISOString(), fields: ann }, a: 'anon', n });

  it('keeps items still gathering or written after the read began, and lets go of those another tab took out', async () => {
    const store = memoryStore();
    const queue = createQueue(store, () => {});
    // Written, then taken out of the store by another tab.
    await queue.add(entry('sent-elsewhere', 1), 100);
    await store.write([[queue.held.get('sent-elsewhere')!.row!, undefined]]);
    // Still gathering when the read happens.
    const gathering = queue.add(entry('gathering', 2), 100);
    const writesBeforeRead = queue.writes;
    const rows = await store.all();
    // Written after the read began: not in `rows`, but stored.
    await queue.settle();
    await gathering;
    queue.adopt(rows, writesBeforeRead);
    expect([...queue.held.keys()]).toEqual(['gathering']);
    expect((await store.all()).flatMap(([, value]) => value as Entry[]).map((e) => e.item.id)).toEqual(['gathering']);
  });

  /**
   * A store whose reads and writes take effect in the order they are called, as IndexedDB
   * transactions on one object store do, but answer only when the test lets them.
   */
  function steppedStore() {
    const inner = memoryStore();
    let holding = false;
    const held: Record<'read' | 'write', (() => void)[]> = { read: [], write: [] };
    const hold = <T>(kind: 'read' | 'write', answer: Promise<T>): Promise<T> =>
      holding ? new Promise((resolve) => held[kind].push(() => resolve(answer))) : answer;
    const store: Store = {
      all: () => hold('read', inner.all()),
      write: (changes) => hold('write', inner.write(changes)),
      clear: () => inner.clear(),
    };
    const release = (kind: 'read' | 'write') => held[kind].shift()!();
    return { store, hold: (on: boolean) => (holding = on), release };
  }

  /** Every order of two sequences of steps that keeps each one's own order. */
  const interleavings = <T>(a: T[], b: T[]): T[][] =>
    !a.length
      ? [b]
      : !b.length
        ? [a]
        : [...interleavings(a.slice(1), b).map((rest) => [a[0]!, ...rest]), ...interleavings(a, b.slice(1)).map((rest) => [b[0]!, ...rest])];

  // This page takes `sent` out (the relay acknowledged it) while a full read runs, in each order of:
  // the removal, its write beginning, that write answering / the read beginning, the read answering and adopted.
  const orders = interleavings(['remove', 'write begins', 'write answers'], ['read begins', 'read adopted']);

  it.each(orders.map((order) => [order.join(' → '), order]))('never takes back an item this page took out, whatever the interleaving: %s', async (_, order) => {
    const { store, hold, release } = steppedStore();
    const queue = createQueue(store, () => {});
    await queue.add(entry('sent', 1), 100);
    // The removal's write begins at its step only, never on the gathering timer.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    // Stored by another tab: a full read brings it in.
    await store.write([['other-row', [entry('other', 2)]]]);
    hold(true);
    let read: Promise<[IDBValidKey, unknown][]> | undefined;
    let writesBeforeRead = 0;
    let settled: Promise<void> | undefined;
    for (const step of order) {
      if (step === 'remove') queue.remove(['sent']);
      if (step === 'write begins') settled = queue.settle();
      if (step === 'write answers') release('write');
      if (step === 'read begins') {
        writesBeforeRead = queue.writes;
        read = store.all();
      }
      if (step === 'read adopted') {
        release('read');
        queue.adopt(await read!, writesBeforeRead);
      }
      // Steps, not time: what each step set off runs before the next one (well within the 10 ms writes gather).
      await microtasks();
    }
    await settled;
    vi.useRealTimers();
    hold(false);
    expect([...queue.held.keys()]).toEqual(['other']);
    expect((await store.all()).flatMap(([, value]) => value as Entry[]).map((e) => e.item.id)).toEqual(['other']);
    // A later read changes nothing.
    queue.adopt(await store.all(), queue.writes);
    expect([...queue.held.keys()]).toEqual(['other']);
  });

  it('flush() during an automatic flush never sends an acknowledged item again, even when its removal is written while the full read runs', async () => {
    // IndexedDB, with one interleaving forced: the removal of what the relay acknowledged begins
    // only after flush()'s full read has begun, and the read answers only after that.
    const inner = idbStore('pk_test');
    let armed = false;
    let readBegan!: () => void;
    const reading = new Promise<void>((resolve) => (readBegan = resolve));
    let removalBegan!: () => void;
    const removing = new Promise<void>((resolve) => (removalBegan = resolve));
    const store: Store = {
      all: () => {
        if (!armed) return inner.all();
        const rows = inner.all();
        readBegan();
        return removing.then(() => rows);
      },
      write: async (changes) => {
        if (armed && changes.some(([key, change]) => key !== 'meta' && typeof change === 'function')) {
          await reading;
          const written = inner.write(changes);
          removalBegan();
          return written;
        }
        return inner.write(changes);
      },
      clear: () => inner.clear(),
    };
    const relay = fakeRelay();
    const { t } = await tracker({ store }, relay);
    await t.identify(ann);
    await t.track('act:cm:once');
    armed = true;
    // The automatic flush (the browser coming back online), and the page's own flush() meanwhile.
    dispatchEvent(new Event('online'));
    await t.flush();
    await t.flush();
    const ids = relay.items().map((item) => item.id);
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
    expect(await queued()).toEqual([]);
  });

  it('does not take back what this page took out and has still to write', async () => {
    const store = memoryStore();
    const queue = createQueue(store, () => {});
    await Promise.all([queue.add(entry('a', 1), 100), queue.add(entry('b', 2), 100)]);
    queue.remove(['a']);
    queue.adopt(await store.all(), queue.writes);
    expect([...queue.held.keys()]).toEqual(['b']);
    await queue.settle();
    expect((await store.all()).flatMap(([, value]) => value as Entry[]).map((e) => e.item.id)).toEqual(['b']);
  });
});
