// One store per site key: two trackers with different keys on one origin (a key migration, two
// apps) never adopt or send each other's items.
import { describe, expect, it } from 'vitest';
import { ann, fakeRelay, queued, tracker } from './support.js';

describe('one store per site key', () => {
  it('two trackers with different keys on one origin each send only their own items, under their own key, once', async () => {
    const relay = fakeRelay();
    const a = await tracker({ key: 'pk_a', consent: 'store-only' }, relay);
    const b = await tracker({ key: 'pk_b', consent: 'store-only' }, relay);
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
    const a = await tracker({ key: 'pk_a', consent: 'store-only' });
    const b = await tracker({ key: 'pk_b', consent: 'store-only' });
    await a.t.track('act:cm:from-a');
    await b.t.track('act:cm:from-b');
    await a.t.consent('denied');
    expect(await queued('pk_a')).toEqual([]);
    expect((await queued('pk_b')).map((entry) => entry.item.type === 'track' && entry.item.activity_id)).toEqual(['act:cm:from-b']);
  });
});
