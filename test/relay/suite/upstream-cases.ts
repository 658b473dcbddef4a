/**
 * The platform misbehaving: 429 with try-in-seconds (the relay waits it out), 500 then
 * recovery, the platform down (items `retry`, 503 + Retry-After, nothing lost), and
 * exactly-once across a restart.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { delivered, identify, ORIGIN, read, siteKey, sites, track, type RelayTarget, type RelayUnderTest } from './target.js';

export function upstreamCases(target: () => RelayTarget): void {
  describe('upstream trouble and exactly-once', () => {
    const key = siteKey('up');
    let relay: RelayUnderTest;
    beforeAll(async () => {
      // An entry the platform did not take goes again after 0.1 s, then 0.3 s (1 s, then 3 s by default; the
      // least the setting takes, and what test/workerd/wrangler.toml gives the Workers' outbox objects).
      relay = await target().start({ RELAY_SITES: sites({ key, origins: [ORIGIN] }), RELAY_BUDGET_MS: '4000', RELAY_DELIVERY_RETRY_MS: '100' });
    });
    afterAll(async () => {
      await target().upstream.always(undefined);
      await relay.close();
    });
    const calls = async () => (await delivered(target(), relay)).filter((call) => call.path.startsWith('/v1/'));

    it('waits try-in-seconds after a 429 before calling the platform again, then forwards', async () => {
      await relay.drained();
      await target().upstream.reset();
      await target().upstream.faults([{ status: 429, body: { error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 1 } } }]);
      const item = track('act:cm:viewed', { 'str::email': 'rl@example.com' });
      const response = await read(await relay.post({ key, batch: [item] }));
      expect(response.status).toBe(200);
      expect(response.body.results[0].status).toBe('accepted');
      const [limited, retried] = await calls();
      expect(limited!.status).toBe(429);
      expect(retried!.status).toBe(200);
      expect(retried!.at - limited!.at).toBeGreaterThanOrEqual(950);
    });

    it('retries a 500 and forwards once the platform recovers', async () => {
      await relay.drained();
      await target().upstream.reset();
      await target().upstream.faults([{ status: 500 }]);
      const item = identify({ 'str::email': 'five@example.com' });
      const response = await read(await relay.post({ key, batch: [item] }));
      expect(response.body.results).toEqual([{ id: item.id, status: 'accepted' }]);
      expect((await calls()).map((call) => call.status)).toEqual([500, 200]);
    });

    it('answers 503 with Retry-After and every item `retry` while the platform is down, and loses nothing', async () => {
      await relay.drained();
      await target().upstream.reset();
      await target().upstream.always({ drop: true });
      const batch = [identify({ 'str::email': 'down@example.com' }), track('act:cm:viewed', { 'str::email': 'down@example.com' })];
      const down = await read(await relay.post({ key, batch }));
      if (target().deliversLater) {
        // Accepted while the platform is down: the identify is tried again until it gets through, and
        // its track waits behind it; nothing lost, nothing twice.
        expect(down.body.results.map((r: { status: string }) => r.status)).toEqual(['accepted', 'accepted']);
        await expect.poll(async () => (await target().upstream.received()).length, { timeout: 5_000 }).toBeGreaterThan(1);
        await target().upstream.always(undefined);
        const sent = await calls();
        expect(sent.filter((call) => call.status === 0).every((call) => call.path === '/v1/person/merge')).toBe(true);
        expect(sent.filter((call) => call.status === 200).map((call) => call.path)).toEqual(['/v1/person/merge', '/v1/activities/create']);
        return;
      }
      expect(down.status).toBe(503);
      expect(Number(down.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(down.body.error.code).toBe('upstream_unavailable');
      expect(down.body.error.details.map((r: { id: string; status: string }) => [r.id, r.status])).toEqual(batch.map((item) => [item.id, 'retry']));
      expect((await calls()).length).toBeGreaterThan(0);

      await target().upstream.always(undefined);
      await relay.drained();
      await target().upstream.reset();
      const back = await read(await relay.post({ key, batch }));
      expect(back.status).toBe(200);
      expect(back.body.results.map((r: { status: string }) => r.status)).toEqual(['accepted', 'accepted']);
      expect((await calls()).map((call) => call.path)).toEqual(['/v1/person/merge', '/v1/activities/create']);
    });

    it("answers a repeat inside one batch with the first copy's outcome: both `retry` while the platform is down, so a client keeps it", async () => {
      await relay.drained();
      await target().upstream.reset();
      await target().upstream.always({ drop: true });
      const item = track('act:cm:viewed', { 'str::email': 'twice@example.com' });
      const down = await read(await relay.post({ key, batch: [item, { ...item }] }));
      if (target().deliversLater) {
        await target().upstream.always(undefined);
        expect(down.body.results.map((r: { status: string }) => r.status)).toEqual(['accepted', 'accepted']);
        expect((await calls()).filter((call) => call.status === 200).map((call) => call.body.activities.length)).toEqual([1]);
        return;
      }
      expect(down.status).toBe(503);
      expect(down.body.error.details.map((r: { id: string; status: string }) => [r.id, r.status])).toEqual([
        [item.id, 'retry'],
        [item.id, 'retry'],
      ]);
      await target().upstream.always(undefined);
      await relay.drained();
      await target().upstream.reset();
      const back = await read(await relay.post({ key, batch: [item, { ...item }] }));
      expect(back.body.results.map((r: { status: string }) => r.status)).toEqual(['accepted', 'accepted']);
      expect((await calls()).filter((call) => call.status === 200).map((call) => call.body.activities.length)).toEqual([1]);
    });

    it('remembers forwarded ids across a restart', async () => {
      const item = track('act:cm:viewed', { 'str::email': 'restart@example.com' });
      expect((await read(await relay.post({ key, batch: [item] }))).body.results[0].status).toBe('accepted');
      await relay.drained();
      await relay.restart();
      await relay.drained();
      await target().upstream.reset();
      const again = await read(await relay.post({ key, batch: [item] }));
      expect(again.body.results[0]).toEqual({ id: item.id, status: 'duplicate' });
      expect(await calls()).toEqual([]);
    });

    it('forwards 100 items in one call per endpoint', async () => {
      await relay.drained();
      await target().upstream.reset();
      const batch = [
        ...Array.from({ length: 40 }, (_, n) => identify({ 'str::email': `bulk${n}@example.com` })),
        ...Array.from({ length: 60 }, (_, n) => track('act:cm:viewed', { 'str::email': `bulk${n}@example.com` })),
      ];
      const response = await read(await relay.post({ key, batch }));
      expect(response.body.results.filter((r: { status: string }) => r.status === 'accepted')).toHaveLength(100);
      expect((await calls()).map((call) => [call.path, (call.body.people ?? call.body.activities).length])).toEqual([
        ['/v1/person/merge', 40],
        ['/v1/activities/create', 60],
      ]);
    });
  });
}
