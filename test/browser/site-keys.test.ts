// One store per site key: two trackers with different keys on one origin (a key migration, two
// apps) never adopt or send each other's items, and the rows of older snippets (plain keys) move
// under the first key that opens the store, once.
import { createStore, entries, set } from 'idb-keyval';
import { describe, expect, it } from 'vitest';
import { ann, fakeRelay, queued, tracker } from './support.js';

const ids = (relay: ReturnType<typeof fakeRelay>) => relay.sent.flatMap((sent) => sent.body.batch.map((item) => `${sent.body.key} ${item.id}`));

describe('one store per site key', () => {
  it('two trackers with different keys on one origin each send only their own items, under their own key, once', async () => {
    const relay = fakeRelay();
    const a = await tracker({ key: 'pk_a', consent: 'pending' }, relay);
    const b = await tracker({ key: 'pk_b', consent: 'pending' }, relay);
    await a.t.identify(ann);
    await a.t.track('act:cm:from-a');
    await b.t.identify({ 'str::email': 'bob@example.com' });
    await b.t.track('act:cm:from-b');
    await b.t.consent('granted');
    await b.t.flush();
    await a.t.consent('granted');
    await a.t.flush();
    await b.t.flush();
    const byKey = (key: string) => relay.sent.filter((sent) => sent.body.key === key).flatMap((sent) => sent.body.batch);
    expect(byKey('pk_a').map((item) => (item.type === 'track' ? item.activity_id : item.type))).toEqual(['identify', 'act:cm:from-a']);
    expect(byKey('pk_b').map((item) => (item.type === 'track' ? item.activity_id : item.type))).toEqual(['identify', 'act:cm:from-b']);
    expect(new Set(relay.items().map((item) => item.id)).size).toBe(4);
    // Each has its own queue id, anonymous id and person.
    expect(byKey('pk_b').find((item) => item.type === 'track')).toMatchObject({ person: { 'str::email': 'bob@example.com' } });
    expect(await queued('pk_a')).toEqual([]);
    expect(await queued('pk_b')).toEqual([]);
  });

  it("consent 'denied' under one key deletes that key's queue only", async () => {
    const a = await tracker({ key: 'pk_a', consent: 'pending' });
    const b = await tracker({ key: 'pk_b', consent: 'pending' });
    await a.t.track('act:cm:from-a');
    await b.t.track('act:cm:from-b');
    await a.t.consent('denied');
    expect(await queued('pk_a')).toEqual([]);
    expect((await queued('pk_b')).map((entry) => entry.item.type === 'track' && entry.item.activity_id)).toEqual(['act:cm:from-b']);
  });

  it('moves the rows of an older snippet under the first key that opens the store, exactly once', async () => {
    // The layout before one store per key: plain row keys, a meta record and entries (a row of a batch, and a single one).
    const db = createStore('cdp-edge', 'queue');
    const entry = (id: string) => ({
      item: { id, type: 'track', ts: new Date().toISOString(), activity_id: 'act:cm:old' },
      a: 'anon-old',
      n: Date.now() * 1000,
    });
    await set('meta', { a: 'anon-old', q: 'queue-old', m: { 'anon-old': { p: ann } } }, db);
    await set('old-1', [entry('old-1'), entry('old-2')], db);
    await set('old-3', entry('old-3'), db);

    const relay = fakeRelay();
    const first = await tracker({ key: 'pk_first', consent: 'pending' }, relay);
    const second = await tracker({ key: 'pk_second' }, relay);
    await second.t.flush();
    expect(relay.sent).toEqual([]);
    // No plain keys are left; the first key holds the old rows, meta included.
    expect((await entries(db)).filter(([key]) => !Array.isArray(key))).toEqual([]);
    expect((await queued('pk_first')).map((e) => e.item.id).sort()).toEqual(['old-1', 'old-2', 'old-3']);

    await first.t.consent('granted');
    await first.t.flush();
    expect(ids(relay).sort()).toEqual(['pk_first old-1', 'pk_first old-2', 'pk_first old-3']);
    expect(relay.sent.every((sent) => sent.body.queue === 'queue-old')).toBe(true);
    expect(relay.items().every((item) => item.type === 'track' && item.person?.['str::email'] === ann['str::email'])).toBe(true);

    // Reloads of either key move and send nothing again.
    for (const key of ['pk_first', 'pk_second']) {
      const again = await tracker({ key }, relay);
      await again.t.flush();
    }
    expect(relay.items()).toHaveLength(3);
  });
});
