/**
 * The door for servers, `POST /server/collect`, on every runtime and store of the suite: one id
 * sent again (a retried webhook, another instance, after a restart of the relay) lands once; its
 * identify goes whole (the server vouches) with no address of the connection, which is the server's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../../src/relay/core/tokens.js';
import { delivered, identify, ORIGIN, read, type RelayTarget, type RelayUnderTest, siteKey, sites, track } from './target.js';

const TOKEN = 'rt_suite_server_door_0123456789';

export function serverDoorCases(target: () => RelayTarget): void {
  describe('the door for servers', () => {
    let relay: RelayUnderTest;
    beforeAll(async () => {
      relay = await target().start({
        // A browser site that proves nothing: the server door's items do not depend on it.
        RELAY_SITES: sites({ key: siteKey('door'), origins: [ORIGIN], verify: 'optional' }),
        RELAY_TOKENS: JSON.stringify([{ name: 'suite-shop', sha256: await hashToken(TOKEN), scopes: ['collect'] }]),
      });
    });
    afterAll(() => relay?.close());
    const send = (batch: unknown[]) =>
      relay.fetch('/server/collect', {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ batch }),
      });

    it('lands one id once however often it is sent, a restart between; its identify goes whole, with no address of the connection', async () => {
      await relay.drained();
      await target().upstream.reset();
      const email = `door-${crypto.randomUUID().slice(0, 8)}@example.com`;
      const person = identify({ 'str::email': email, 'str::first': 'Dora' }, { id: `crm-${email}`, tags: ['vip'] });
      const paid = track('act:cm:viewed', { 'str::email': email }, { id: `order-${email}` });
      expect((await read(await send([person, paid]))).body.results).toEqual([
        { id: person.id, status: 'accepted' },
        { id: paid.id, status: 'accepted' },
      ]);
      expect((await read(await send([paid]))).body.results).toEqual([{ id: paid.id, status: 'duplicate' }]);
      await relay.drained();
      await relay.restart();
      expect((await read(await send([paid, person]))).body.results.map((result: { status: string }) => result.status)).toEqual(['duplicate', 'duplicate']);
      await relay.drained();
      const calls = (await delivered(target(), relay)).filter((call) => call.status >= 200 && call.status < 300);
      const merged = calls.filter((call) => call.path === '/v1/person/merge').flatMap((call) => call.body.people);
      const added = calls.filter((call) => call.path === '/v1/activities/create').flatMap((call) => call.body.activities);
      expect(merged).toEqual([{ fields: { 'str::email': email, 'str::first': 'Dora' }, tags: ['vip'] }]);
      expect(added).toEqual([expect.objectContaining({ activity_id: 'act:cm:viewed', fields: { 'str::email': email } })]);
      expect(added[0].location).toBeUndefined();
    });
  });
}
