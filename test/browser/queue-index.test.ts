import { createStore, get, set } from 'idb-keyval';
import { describe, expect, it } from 'vitest';
import { idbStore, type Store } from '../../src/browser/index.js';
import { ann, fakeRelay, queued, tracker } from './support.js';

/** The IndexedDB store with each operation counted. */
function countingStore() {
  const inner = idbStore();
  const calls = { all: 0, put: 0, del: 0, clear: 0, update: 0 };
  const store: Store = {
    all: () => {
      calls.all++;
      return inner.all();
    },
    put: (rows) => {
      calls.put++;
      return inner.put(rows);
    },
    del: (keys) => {
      calls.del++;
      return inner.del(keys);
    },
    clear: () => {
      calls.clear++;
      return inner.clear();
    },
    update: (key, change) => {
      calls.update++;
      return inner.update(key, change);
    },
  };
  return { store, calls };
}

const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));
const meta = () => get<{ a: string; q?: string }>('meta', createStore('cdp-edge', 'queue'));

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
    expect(calls.put - before.put).toBe(50);
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
    const inner = idbStore();
    let puts = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const store: Store = {
      ...inner,
      put: async (rows) => {
        puts++;
        if (puts === 1) await gate;
        return inner.put(rows);
      },
    };
    const { t } = await tracker({ store, consent: 'pending' });
    const first = t.track('act:cm:a');
    await nextTask();
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
    await set('meta', { a: 'old-anonymous', m: { 'old-anonymous': { p: ann } } }, db);
    const item = { id: 'old-1', type: 'track', ts: new Date().toISOString(), activity_id: 'act:cm:old' };
    await set('old-1', { item, a: 'old-anonymous', n: Date.now() * 1000 }, db);
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
