import { afterEach, describe, expect, it } from 'vitest';
import { ann, queued, tracker } from './support.js';

describe('consent', () => {
  it('pending stores but never sends; granted sends what was stored', async () => {
    const { t, relay } = await tracker({ consent: 'pending' });
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
    const { t, relay, events } = await tracker({ consent: 'pending' });
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
    const first = await tracker({ consent: 'pending' });
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
    await b.t.consent('pending');
    // The first tab reads the other's choice with its changes, and sends nothing from then on.
    await a.t.flush();
    expect(a.relay.sent).toEqual([]);
    dispatchEvent(new Event('pagehide'));
    expect(beacons).toEqual([]);
    expect(await queued()).toHaveLength(2);
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
