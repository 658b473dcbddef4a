/**
 * What the relay adds: the visitor's address (a browser-sent one is ignored) and, only
 * when lookup is on and the month's budget allows, the postal address.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { delivered, identify, ORIGIN, read, siteKey, sites, track, type RelayTarget, type RelayUnderTest } from './target.js';

const address = { address: '10 Downing Street, London', country: 'GB' };

export function enrichmentCases(target: () => RelayTarget): void {
  describe('enrichment', () => {
    const relays: RelayUnderTest[] = [];
    afterAll(async () => {
      for (const relay of relays) await relay.close();
    });
    const start = async (env: Record<string, string>) => {
      const relay = await target().start(env);
      relays.push(relay);
      return relay;
    };
    const forwardedLocations = async () =>
      (await delivered(target(), ...relays))
        .filter((call) => call.path.startsWith('/v1/'))
        .flatMap((call) => (call.body.people ?? call.body.activities).map((entry: { location?: Record<string, unknown> }) => entry.location));

    it("replaces a browser-sent source_ip with the visitor's address", async () => {
      const key = siteKey('ip');
      const relay = await start({ RELAY_SITES: sites({ key, origins: [ORIGIN], verify: 'off' }) });
      await target().upstream.reset();
      const item = track('act:cm:viewed', { 'str::email': 'ip@example.com' }, { location: { source_ip: '198.51.100.66', custom: { city_name: 'Lyon' } } });
      expect((await read(await relay.post({ key, batch: [item] }))).body.results[0].status).toBe('accepted');
      const [location] = await forwardedLocations();
      expect(location).toEqual({ source_ip: relay.visitorIp, custom: { city_name: 'Lyon' } });
    });

    it("sends the visitor's address in full, truncated or not at all, as each site's source_ip says", async () => {
      const modes = ['full', 'truncated', 'none'] as const;
      const keys = modes.map((mode) => siteKey(`source_ip_${mode}`));
      const relay = await start({ RELAY_SITES: sites(...modes.map((mode, i) => ({ key: keys[i], origins: [ORIGIN], verify: 'off', source_ip: mode }))) });
      expect(relay.visitorIp).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      const located = async (key: string) => {
        await target().upstream.reset();
        const item = track('act:cm:viewed', { 'str::email': `${key}@example.com` }, { location: { source_ip: '198.51.100.66' } });
        expect((await read(await relay.post({ key, batch: [item] }))).body.results[0].status).toBe('accepted');
        const [location] = await forwardedLocations();
        return location;
      };
      const custom = relay.visitorCustom;
      expect(await located(keys[0]!)).toEqual({ source_ip: relay.visitorIp, ...(custom ? { custom } : {}) });
      const { lat: _lat, lng: _lng, ...coarse } = custom ?? {};
      expect(await located(keys[1]!)).toEqual({ source_ip: relay.visitorIp.replace(/\.\d+$/, '.0'), ...(custom ? { custom: coarse } : {}) });
      expect(await located(keys[2]!)).toBeUndefined();
    });

    it('drops location.address while lookup is off (the event still goes)', async () => {
      const key = siteKey('lookup_off');
      const relay = await start({ RELAY_SITES: sites({ key, origins: [ORIGIN], verify: 'off' }) });
      await target().upstream.reset();
      const response = await read(await relay.post({ key, batch: [identify({ 'str::email': 'addr@example.com' }, { location: { address } })] }));
      expect(response.body.results[0].status).toBe('accepted');
      const [location] = await forwardedLocations();
      expect(location).toEqual({ source_ip: relay.visitorIp, ...(relay.visitorCustom ? { custom: relay.visitorCustom } : {}) });
    });

    it('forwards addresses while lookup is on, until the monthly budget is spent — and the count survives a restart', async () => {
      const key = siteKey('lookup_on');
      const relay = await start({
        RELAY_SITES: sites({ key, origins: [ORIGIN], verify: 'off' }),
        RELAY_ADDRESS_LOOKUP: 'on',
        RELAY_ADDRESS_LOOKUP_MONTHLY_LIMIT: '3',
      });
      await target().upstream.reset();
      const first = [1, 2].map((n) => track('act:cm:viewed', { 'str::email': `a${n}@example.com` }, { location: { address } }));
      expect((await read(await relay.post({ key, batch: first }))).body.results.map((r: { status: string }) => r.status)).toEqual(['accepted', 'accepted']);
      expect((await forwardedLocations()).map((location) => location.address)).toEqual([address, address]);

      await relay.restart();
      await target().upstream.reset();
      const second = [3, 4].map((n) => track('act:cm:viewed', { 'str::email': `a${n}@example.com` }, { location: { address } }));
      const response = await read(await relay.post({ key, batch: second }));
      // One lookup was left: the first item keeps its address, the second goes without one.
      expect(response.body.results.map((r: { status: string }) => r.status)).toEqual(['accepted', 'accepted']);
      expect((await forwardedLocations()).map((location) => location.address)).toEqual([address, undefined]);
    });
  });
}
