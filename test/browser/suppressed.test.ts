// An item the relay refuses as `suppressed` (its person was erased at the relay, `cdp-edge erase`)
// leaves the queue for good, like every rejected item: never sent again, reported as a drop.
import { describe, expect, it } from 'vitest';
import { ann, fakeRelay, queued, tracker } from './support.js';

describe('an item whose person was erased at the relay', () => {
  it('is dropped with reason suppressed and never sent again; the next item goes alone', async () => {
    let refuse = true;
    const relay = fakeRelay(({ body }) =>
      Response.json({
        results: body.batch.map((item) =>
          refuse ? { id: item.id, status: 'rejected', reason: 'suppressed', error: 'erased at the relay' } : { id: item.id, status: 'accepted' },
        ),
      }),
    );
    const { t, relay: sent, events } = await tracker({}, relay);
    await t.identify(ann);
    await t.flush();
    expect(events.drop).toEqual([{ item: expect.objectContaining({ type: 'identify' }), reason: 'suppressed' }]);
    expect(await queued()).toEqual([]);
    refuse = false;
    await t.track('act:cm:after');
    await t.flush();
    expect(sent.sent.at(-1)!.body.batch.map((item) => item.type)).toEqual(['track']);
    expect(await queued()).toEqual([]);
  });
});
