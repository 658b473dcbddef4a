import { afterEach, describe, expect, it } from 'vitest';
import { ann, queued, siteRows, tracker } from './support.js';

describe('consent', () => {
  it('store-only stores but never sends; granted sends what was stored', async () => {
    const { t, relay } = await tracker({ consent: 'store-only' });
    await t.identify(ann);
    await t.track('act:cm:viewed');
    await t.flush();
    expect(relay.sent).toEqual([]);
    expect(await queued()).toHaveLength(2);
    await t.consent('granted');
    await t.flush();
    expect(relay.items().map((i) => i.type)).toEqual(['identify', 'track']);
    expect(await queued()).toEqual([]);
  });

  it('denied deletes the queue and stores nothing after, reporting each item it deletes and each call after', async () => {
    const { t, relay, events } = await tracker({ consent: 'store-only' });
    await t.identify(ann);
    await t.track('act:cm:viewed');
    await t.consent('denied');
    expect(await queued()).toEqual([]);
    await t.track('act:cm:viewed');
    await t.flush();
    expect(await queued()).toEqual([]);
    expect(relay.sent).toEqual([]);
    expect(events.drop.map(({ item, reason }) => [item.type, reason])).toEqual([
      ['identify', 'consent'],
      ['track', 'consent'],
      ['track', 'consent'],
    ]);
  });

  it('remembers the choice on the next page load over the configured default', async () => {
    const first = await tracker({ consent: 'store-only' });
    await first.t.consent('denied');
    const second = await tracker({ consent: 'granted' });
    await second.t.track('act:cm:viewed');
    expect(await queued()).toEqual([]);
    await second.t.consent('granted');
    await second.t.identify(ann);
    expect(await queued()).toHaveLength(1);
  });

  it('a choice made in another tab holds the exit beacon, as it holds flushes', async () => {
    const beacons: string[] = [];
    const a = await tracker({
      sendBeacon: (_url, body) => {
        beacons.push(body);
        return true;
      },
    });
    const b = await tracker();
    await a.t.identify(ann);
    await a.t.track('act:cm:viewed');
    await b.t.consent('store-only');
    // The first tab reads the other's choice with its changes, and sends nothing from then on.
    await a.t.flush();
    expect(a.relay.sent).toEqual([]);
    dispatchEvent(new Event('pagehide'));
    expect(beacons).toEqual([]);
    expect(await queued()).toHaveLength(2);
  });

  describe('pending: in memory until the visitor chooses', () => {
    it('keeps nothing on the device before the choice; granted stores and sends every event once', async () => {
      const { t, relay, events } = await tracker({ consent: 'pending' });
      await t.track('act:cm:viewed');
      await t.identify(ann);
      await t.track('act:cm:bought');
      await t.flush();
      expect(relay.sent).toEqual([]);
      // Not a queue row, not even the meta record with the anonymous id.
      expect(await siteRows()).toEqual([]);
      expect(events.queue).toHaveLength(3);
      await t.consent('granted');
      expect(await queued()).toHaveLength(3);
      await t.flush();
      expect(relay.items().map((i) => [i.type, i.type === 'track' && i.activity_id, i.type === 'track' && i.person?.['str::email']])).toEqual([
        ['identify', false, false],
        ['track', 'act:cm:viewed', ann['str::email']],
        ['track', 'act:cm:bought', ann['str::email']],
      ]);
      expect(await queued()).toEqual([]);
      await t.flush();
      expect(relay.items()).toHaveLength(3);
      expect((await siteRows()).map(([row]) => row)).toEqual(['meta']);
    });

    it('denied drops what was kept in memory and deletes what earlier pages stored, leaving nothing on the device', async () => {
      const earlier = await tracker({ consent: 'store-only' });
      await earlier.t.identify(ann);
      expect(await siteRows()).not.toEqual([]);
      const { t, relay, events } = await tracker({ consent: 'pending' });
      await t.track('act:cm:viewed');
      await t.consent('denied');
      expect(events.drop.map(({ reason }) => reason)).toEqual(['consent']);
      expect(await siteRows()).toEqual([]);
      await t.track('act:cm:after');
      await t.flush();
      expect(await siteRows()).toEqual([]);
      expect(relay.sent).toEqual([]);
    });

    it('a later grant joins what earlier pages stored: their visitor, queue and held events go with the person identified in memory', async () => {
      const earlier = await tracker({ consent: 'store-only' });
      await earlier.t.track('act:cm:first-visit');
      const stored = (await siteRows()).find(([row]) => row === 'meta')![1] as { a: string; q: string };
      const { t, relay } = await tracker({ consent: 'pending' });
      await t.track('act:cm:second-visit');
      await t.identify(ann);
      await t.consent('granted');
      await t.track('act:cm:after-grant');
      await t.flush();
      const meta = (await siteRows()).find(([row]) => row === 'meta')![1] as { a: string; q: string };
      expect([meta.a, meta.q]).toEqual([stored.a, stored.q]);
      expect(relay.sent.every((sent) => sent.body.queue === stored.q)).toBe(true);
      const tracks = relay.items().filter((i) => i.type === 'track');
      expect(tracks.map((i) => i.activity_id).sort()).toEqual(['act:cm:after-grant', 'act:cm:first-visit', 'act:cm:second-visit']);
      expect(tracks.every((i) => i.person?.['str::email'] === ann['str::email'])).toBe(true);
      expect(await queued()).toEqual([]);
    });

    it("events kept in memory stay the visitor's after a grant that joins an earlier page: an identify after it sends them all", async () => {
      const earlier = await tracker({ consent: 'store-only' });
      await earlier.t.track('act:cm:first-visit');
      const { t, relay, events } = await tracker({ consent: 'pending' });
      await t.track('act:cm:second-visit');
      await t.consent('granted');
      await t.identify(ann);
      await t.flush();
      expect(events.drop).toEqual([]);
      const tracks = relay.items().filter((i) => i.type === 'track');
      expect(tracks.map((i) => i.activity_id).sort()).toEqual(['act:cm:first-visit', 'act:cm:second-visit']);
      expect(tracks.every((i) => i.person?.['str::email'] === ann['str::email'])).toBe(true);
    });

    it('holds at most maxItems in memory, the oldest dropped first', async () => {
      const { t, relay, events } = await tracker({ consent: 'pending', maxItems: 3 });
      await t.identify(ann);
      for (const n of [1, 2, 3, 4]) await t.track('act:cm:viewed', { 'int:cm:n': n });
      expect(events.drop.map(({ reason }) => reason)).toEqual(['cap', 'cap']);
      await t.consent('granted');
      await t.flush();
      expect(relay.items().map((i) => (i.type === 'track' ? i.attributes?.['int:cm:n'] : i.type))).toEqual([2, 3, 4]);
      expect(await siteRows()).toHaveLength(1);
    });

    it('store-only moves what was kept in memory to the device, still sending nothing', async () => {
      const { t, relay } = await tracker({ consent: 'pending' });
      await t.track('act:cm:viewed');
      await t.consent('store-only');
      await t.flush();
      expect(await queued()).toHaveLength(1);
      expect(relay.sent).toEqual([]);
    });
  });

  it('rejects an unknown state with an error naming the three', async () => {
    const { t } = await tracker();
    await expect(t.consent('yes' as never)).rejects.toThrow(/cdp\.consent\(\): E8 yes/);
  });

  describe('privacy signals', () => {
    afterEach(() => {
      delete (navigator as { globalPrivacyControl?: boolean }).globalPrivacyControl;
    });

    it('with privacySignals, Global Privacy Control works as denied: nothing is stored or sent', async () => {
      Object.defineProperty(navigator, 'globalPrivacyControl', { value: true, configurable: true });
      const { t, relay } = await tracker({ privacySignals: true });
      await t.identify(ann);
      await t.consent('granted');
      await t.track('act:cm:viewed');
      await t.flush();
      expect(await queued()).toEqual([]);
      expect(relay.sent).toEqual([]);
    });

    it('without privacySignals the signal is not acted on', async () => {
      Object.defineProperty(navigator, 'globalPrivacyControl', { value: true, configurable: true });
      const { t, relay } = await tracker();
      await t.identify(ann);
      await t.flush();
      expect(relay.items()).toHaveLength(1);
    });
  });
});
