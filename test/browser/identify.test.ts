import { describe, expect, it } from 'vitest';
import { ann, fakeRelay, queued, tracker } from './support.js';

const bob = { 'str::ei': 'u-42' };

describe('identify', () => {
  it('names the person on later tracks, with the user_hash', async () => {
    const { t, relay } = await tracker();
    const hash = 'ab'.repeat(32);
    await t.identify({ ...ann, 'str::first': 'Ann' }, { user_hash: hash });
    await t.track('act:cm:viewed');
    await t.flush();
    expect(relay.items()[0]).toMatchObject({ type: 'identify', user_hash: hash });
    expect(relay.items()[1]).toMatchObject({ type: 'track', person: ann, user_hash: hash });
  });

  it('holds tracks made before identify and sends them with the person once known', async () => {
    const { t, relay } = await tracker();
    await t.track('act:cm:landed');
    await t.flush();
    expect(relay.sent).toEqual([]);
    expect(await queued()).toHaveLength(1);
    await t.identify(bob);
    await t.flush();
    // identify first: the person exists before their activities arrive
    expect(relay.items().map((i) => [i.type, i.type === 'track' ? i.person : undefined])).toEqual([
      ['identify', undefined],
      ['track', bob],
    ]);
  });

  it('remembers the person across page loads', async () => {
    const first = await tracker({ consent: 'store-only' });
    await first.t.identify(ann);
    const second = await tracker();
    await second.t.track('act:cm:viewed');
    await second.t.flush();
    expect(second.relay.items().find((i) => i.type === 'track')).toMatchObject({ person: ann });
  });

  it('reset forgets the person: later tracks wait for the next identify', async () => {
    const { t, relay } = await tracker();
    await t.identify(ann);
    await t.track('act:cm:before');
    await t.reset();
    await t.track('act:cm:after');
    await t.flush();
    expect(relay.items().map((i) => (i.type === 'track' ? i.activity_id : i.type))).toEqual(['identify', 'act:cm:before']);
    await t.identify(bob);
    await t.flush();
    expect(relay.items().at(-1)).toMatchObject({ activity_id: 'act:cm:after', person: bob });
  });

  it('tracks held before identify keep their person through a later reset', async () => {
    const { t, relay } = await tracker({ consent: 'store-only' });
    await t.track('act:cm:landed');
    await t.identify(ann);
    await t.reset();
    await t.consent('granted');
    await t.flush();
    expect(relay.items().find((i) => i.type === 'track')).toMatchObject({ activity_id: 'act:cm:landed', person: ann });
  });

  it('drops held tracks of an anonymous session that ended with reset, saying so', async () => {
    const { t, relay, events } = await tracker();
    await t.track('act:cm:landed');
    await t.reset();
    await t.flush();
    expect(relay.sent).toEqual([]);
    expect(await queued()).toEqual([]);
    expect(events.drop).toEqual([{ item: expect.objectContaining({ activity_id: 'act:cm:landed' }), reason: 'reset' }]);
  });

  it('a tab picks up a reset done in another tab at its next flush, so its anonymous events wait for the next person', async () => {
    const relay = fakeRelay();
    const a = await tracker({}, relay);
    const b = await tracker({}, relay);
    await a.t.identify(ann);
    await a.t.reset();
    await b.t.flush();
    await b.t.track('act:cm:after-logout');
    await a.t.identify(bob);
    await a.t.flush();
    await b.t.flush();
    expect(a.events.drop).toEqual([]);
    expect(b.events.drop).toEqual([]);
    expect(relay.items().find((i) => i.type === 'track')).toMatchObject({ activity_id: 'act:cm:after-logout', person: bob });
  });

  it("stores the relay's identity token and sends it back with later batches", async () => {
    const relay = fakeRelay((s) => (s.body.batch.some((i) => i.type === 'identify') ? { identity: 'tok.v1.abc' } : {}));
    const { t } = await tracker({}, relay);
    await t.identify(ann, { user_hash: 'cd'.repeat(32) });
    await t.flush();
    expect(relay.sent[0]!.body.identity).toBeUndefined();
    await t.track('act:cm:viewed');
    await t.flush();
    expect(relay.sent[1]!.body.identity).toBe('tok.v1.abc');
    // and on the next page load
    const next = await tracker({}, relay);
    await next.t.track('act:cm:viewed');
    await next.t.flush();
    expect(relay.sent[2]!.body.identity).toBe('tok.v1.abc');
  });

  it('reset also forgets the identity token', async () => {
    const relay = fakeRelay(() => ({ identity: 'tok' }));
    const { t } = await tracker({}, relay);
    await t.identify(ann);
    await t.flush();
    await t.reset();
    await t.identify(bob);
    await t.flush();
    expect(relay.sent[1]!.body.identity).toBeUndefined();
  });
});

describe('the queue id', () => {
  it('goes with every batch, stays the same through identify, reset and a reload, and is shared by tabs', async () => {
    const relay = fakeRelay();
    const { t } = await tracker({}, relay);
    await t.identify(ann);
    await t.track('act:cm:one');
    await t.flush();
    await t.reset();
    await t.identify({ 'str::email': 'bob@example.com' });
    await t.flush();
    // A second tracker on the same store: another tab, or the page after a reload.
    const other = await tracker({}, relay);
    await other.t.track('act:cm:two');
    await other.t.flush();
    const queues = relay.sent.map((sent) => sent.body.queue);
    expect(relay.sent.length).toBeGreaterThanOrEqual(2);
    expect(queues[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(queues).size).toBe(1);
  });
});
