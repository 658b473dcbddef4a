// The relay's dedupe window (`window` in its answer): the snippet keeps it and never sends an
// item older than it; it drops it with a `drop` event, reason `expired`.
import { describe, expect, it } from 'vitest';
import { ann, fakeRelay, queued, tracker } from './support.js';

describe("the relay's window", () => {
  /** A relay announcing a 60 s window that is down (503) while `down` says so. */
  const relay = (state: { down: boolean }) =>
    fakeRelay(({ body }) =>
      state.down
        ? Response.json({ error: { code: 'upstream_unavailable', message: 'down' } }, { status: 503 })
        : Response.json({ results: body.batch.map((item) => ({ id: item.id, status: 'accepted' })), window: 60 }),
    );

  it('is kept from an answer, and an item older than it is dropped as expired, never sent', async () => {
    let now = Date.parse('2026-11-25T10:00:00Z');
    const state = { down: false };
    const { t, relay: sent, events } = await tracker({ now: () => now }, relay(state));
    await t.identify(ann);
    await t.flush();
    expect(sent.items()).toHaveLength(1);
    state.down = true;
    await t.track('act:cm:fresh-then-old');
    await t.flush();
    expect(sent.sent).toHaveLength(2);
    // Back up, but the item is now 61 s old: the relay could not tell it from one it delivered.
    state.down = false;
    now += 61_000;
    await t.track('act:cm:young');
    await t.flush();
    expect(sent.sent.at(-1)!.body.batch.map((item) => (item.type === 'track' ? item.activity_id : item.type))).toEqual(['act:cm:young']);
    expect(events.drop).toEqual([{ item: expect.objectContaining({ activity_id: 'act:cm:fresh-then-old' }), reason: 'expired' }]);
    expect(await queued()).toEqual([]);
  });

  it('survives a reload: the next page drops an old item before its first answer', async () => {
    let now = Date.parse('2026-11-25T10:00:00Z');
    const first = await tracker({ now: () => now }, relay({ down: false }));
    await first.t.identify(ann);
    await first.t.flush();
    const pending = await tracker({ now: () => now, consent: 'store-only' });
    await pending.t.track('act:cm:kept-too-long');
    now += 120_000;
    const next = await tracker({ now: () => now }, relay({ down: false }));
    await next.t.flush();
    expect(next.relay.sent).toEqual([]);
    expect(next.events.drop.map(({ reason }) => reason)).toEqual(['expired']);
  });

  it('an item the relay refuses as expired is dropped with that reason', async () => {
    const expiring = fakeRelay(({ body }) =>
      Response.json({ results: body.batch.map((item) => ({ id: item.id, status: 'rejected', reason: 'expired', error: 'older than the window' })) }),
    );
    const { t, events } = await tracker({}, expiring);
    await t.identify(ann);
    await t.flush();
    expect(events.drop).toEqual([{ item: expect.objectContaining({ type: 'identify' }), reason: 'expired' }]);
    expect(await queued()).toEqual([]);
  });
});
