/**
 * Identity verification under verify off / open / optional / required, with good, bad and missing
 * hashes, and the signed identity token that carries a verified person to later batches.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityHash, userHash } from '../../../src/relay/ingest/identity.js';
import { delivered, identify, IDENTITY_SECRET, ORIGIN, read, siteKey, sites, track, type RelayTarget, type RelayUnderTest } from './target.js';

const hashOf = (value: string, field = 'str::email') => identityHash(IDENTITY_SECRET, field, value);
const WRONG = 'ab'.repeat(32);

export function identityCases(target: () => RelayTarget): void {
  describe('identity verification', () => {
    const off = siteKey('off');
    const optional = siteKey('opt');
    const open = siteKey('open');
    const required = siteKey('req');
    let relay: RelayUnderTest;
    beforeAll(async () => {
      relay = await target().start({
        RELAY_IDENTITY_SECRET: IDENTITY_SECRET,
        RELAY_SITES: sites(
          { key: off, origins: [ORIGIN], verify: 'off' },
          { key: optional, origins: [ORIGIN], verify: 'optional' },
          { key: open, origins: [ORIGIN], verify: 'open' },
          { key: required, origins: [ORIGIN], verify: 'required' },
        ),
      });
    });
    afterAll(() => relay.close());
    const merges = async () => (await delivered(target(), relay)).filter((call) => call.path === '/v1/person/merge');

    it('off: forwards identifies as overwrites whatever the hash, and hands out no token', async () => {
      await relay.drained();
      await target().upstream.reset();
      const response = await read(await relay.post({ key: off, batch: [identify({ 'str::email': 'o@example.com' }, { user_hash: WRONG })] }));
      expect(response.body.results[0].status).toBe('accepted');
      expect(response.body.identity).toBeUndefined();
      const [merge] = await merges();
      expect(merge!.body.merge_strategy).toBe(2);
      expect(merge!.body.people[0].user_hash).toBeUndefined();
    });

    it('optional: a good hash overwrites; a bad or missing one may only create (merge strategy 3)', async () => {
      await relay.drained();
      await target().upstream.reset();
      const good = identify({ 'str::email': 'p@example.com', 'str::first': 'Pat' }, { user_hash: await hashOf('p@example.com') });
      const bad = identify({ 'str::email': 'q@example.com', 'str::first': 'Mallory' }, { user_hash: WRONG });
      const missing = identify({ 'str::email': 'r@example.com' });
      const response = await read(await relay.post({ key: optional, batch: [good, bad, missing] }));
      expect(response.body.results.map((r: { status: string }) => r.status)).toEqual(['accepted', 'accepted', 'accepted']);
      expect(response.body.identity).toEqual(expect.any(String));
      const calls = await merges();
      const byStrategy = Object.fromEntries(
        calls.map((call) => [call.body.merge_strategy, call.body.people.map((p: { fields: Record<string, string> }) => p.fields['str::email'])]),
      );
      expect(byStrategy).toEqual({ 2: ['p@example.com'], 3: ['q@example.com', 'r@example.com'] });
    });

    it('optional rejects an unverified track; open lets it name its person but not change their fields; a verified one may', async () => {
      await relay.drained();
      await target().upstream.reset();
      const email = 'opt-track@example.com';
      const refused = await read(await relay.post({ key: optional, batch: [track('act:cm:viewed', { 'str::email': email, 'str::first': 'Mallory' })] }));
      expect(refused.body.results[0]).toMatchObject({ status: 'rejected', reason: 'unverified' });
      const unverified = await read(await relay.post({ key: open, batch: [track('act:cm:viewed', { 'str::email': email, 'str::first': 'Mallory' })] }));
      expect(unverified.body.results[0].status).toBe('accepted');
      const verified = await read(
        await relay.post({
          key: open,
          batch: [
            identify({ 'str::email': email }, { user_hash: await hashOf(email) }),
            track('act:cm:viewed', { 'str::email': email, 'str::first': 'Olive' }),
          ],
        }),
      );
      expect(verified.body.results.map((r: { status: string }) => r.status)).toEqual(['accepted', 'accepted']);
      const activities = (await delivered(target(), relay))
        .filter((call) => call.path === '/v1/activities/create')
        .flatMap((call) => call.body.activities.map((activity: { fields: unknown }) => activity.fields));
      // Two calls (an unproven one and a proven one are never planned together) that may be in flight
      // together: each once, in whichever order they arrived.
      const byFields = (a: unknown, b: unknown) => JSON.stringify(a).localeCompare(JSON.stringify(b));
      expect(activities.sort(byFields)).toEqual([{ 'str::email': email }, { 'str::email': email, 'str::first': 'Olive' }].sort(byFields));
    });

    it('the value-only hash of earlier versions proves nothing, unless RELAY_IDENTITY_LEGACY_HASH=on', async () => {
      const email = 'legacy@example.com';
      const legacy = identify({ 'str::email': email }, { user_hash: await userHash(IDENTITY_SECRET, email) });
      const strict = await read(await relay.post({ key: required, batch: [legacy] }));
      expect(strict.body.results[0]).toMatchObject({ status: 'rejected', reason: 'unverified' });
      const key = siteKey('legacy');
      const lenient = await target().start({
        RELAY_IDENTITY_SECRET: IDENTITY_SECRET,
        RELAY_IDENTITY_LEGACY_HASH: 'on',
        RELAY_SITES: sites({ key, origins: [ORIGIN], verify: 'required' }),
      });
      try {
        const answer = await read(await lenient.post({ key, batch: [{ ...legacy, id: crypto.randomUUID() }] }));
        expect(answer.body.results[0]).toMatchObject({ status: 'accepted' });
        // as before: it proves the email, else the external ID; with an email present, never the external ID
        const asEi = await read(await lenient.post({ key, batch: [identify({ 'str::ei': email }, { user_hash: await userHash(IDENTITY_SECRET, email) })] }));
        expect(asEi.body.results[0]).toMatchObject({ status: 'accepted' });
        const both = await read(
          await lenient.post({
            key,
            batch: [identify({ 'str::email': 'other@example.com', 'str::ei': email }, { user_hash: await userHash(IDENTITY_SECRET, email) })],
          }),
        );
        expect(both.body.results[0]).toMatchObject({ status: 'rejected', reason: 'unverified' });
      } finally {
        await lenient.close();
      }
    });

    it('required: rejects identifies with a bad or missing hash, accepts a good one (email, or external ID)', async () => {
      await relay.drained();
      await target().upstream.reset();
      const good = identify({ 'str::email': 's@example.com' }, { user_hash: await hashOf('s@example.com') });
      const goodUpper = identify({ 'str::email': 's2@example.com' }, { user_hash: (await hashOf('s2@example.com')).toUpperCase() });
      const byExternalId = identify({ 'str::ei': 'user-42' }, { user_hash: await hashOf('user-42', 'str::ei') });
      const bad = identify({ 'str::email': 't@example.com' }, { user_hash: await hashOf('someone-else@example.com') });
      const missing = identify({ 'str::email': 'u@example.com' });
      const response = await read(await relay.post({ key: required, batch: [good, goodUpper, byExternalId, bad, missing] }));
      expect(response.body.results.map((r: { status: string }) => r.status)).toEqual(['accepted', 'accepted', 'accepted', 'rejected', 'rejected']);
      expect(response.body.results[3].error).toMatch(/user_hash/);
      const forwarded = (await merges()).flatMap((call) =>
        call.body.people.map((p: { fields: Record<string, string> }) => p.fields['str::email'] ?? p.fields['str::ei']),
      );
      expect(forwarded.sort()).toEqual(['s2@example.com', 's@example.com', 'user-42']);
    });

    it('required: a track must name a person verified in the same request or by the token of an earlier one', async () => {
      const email = 'v@example.com';
      const sameRequest = await read(
        await relay.post({
          key: required,
          batch: [track('act:cm:viewed', { 'str::email': email }), identify({ 'str::email': email }, { user_hash: await hashOf(email) })],
        }),
      );
      expect(sameRequest.body.results.map((r: { status: string }) => r.status)).toEqual(['accepted', 'accepted']);
      const token = sameRequest.body.identity as string;
      expect(token).toEqual(expect.any(String));
      expect(token).not.toContain(email);

      const later = await read(await relay.post({ key: required, identity: token, batch: [track('act:cm:viewed', { 'str::email': email })] }));
      expect(later.body.results[0].status).toBe('accepted');
      expect(later.body.identity).toEqual(expect.any(String));

      const noToken = await read(await relay.post({ key: required, batch: [track('act:cm:viewed', { 'str::email': email })] }));
      expect(noToken.body.results[0].status).toBe('rejected');
      expect(noToken.body.results[0].error).toMatch(/verified/);

      const otherPerson = await read(await relay.post({ key: required, identity: token, batch: [track('act:cm:viewed', { 'str::email': 'w@example.com' })] }));
      expect(otherPerson.body.results[0].status).toBe('rejected');

      const tampered = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
      const forged = await read(await relay.post({ key: required, identity: tampered, batch: [track('act:cm:viewed', { 'str::email': email })] }));
      expect(forged.body.results[0].status).toBe('rejected');

      const otherSite = await read(await relay.post({ key: optional, identity: token, batch: [] }));
      expect(otherSite.body.identity).toBeUndefined();

      const anonymous = await read(await relay.post({ key: required, identity: token, batch: [track('act:cm:viewed', undefined)] }));
      expect(anonymous.body.results[0].status).toBe('rejected');
    });
  });
}
