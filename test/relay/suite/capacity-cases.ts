/**
 * Faults and floods every runtime must bear (Node on its SQLite file, Workers on Durable Objects):
 * capacity kept for proven visitors (anonymous items from 150 IPv6 /64 networks fill only their
 * share of the site's outbox, a signed-in visitor is still accepted, and new people stay within
 * the site's budget), and a merge the platform fails every time (dead-lettered after a bounded
 * number of sends while every other item is delivered).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { identityHash } from '../../../src/relay/ingest/identity.js';
import { delivered, identify, IDENTITY_SECRET, ORIGIN, read, siteKey, sites, track, type RelayTarget, type RelayUnderTest } from './target.js';

/** The site may hold 200 entries waiting (per outbox object: one here); unproven items half; 6 new people a minute. */
const SITE_MAX = 200;
const PEOPLE_PER_MINUTE = 6;

export function capacityCases(target: () => RelayTarget): void {
  describe('capacity and faults', () => {
    const relays: RelayUnderTest[] = [];
    afterAll(async () => {
      await target().upstream.always(undefined);
      for (const relay of relays) await relay.close();
    });
    const start = async (env: Record<string, string>) => {
      const relay = await target().start({ RELAY_SHARDS: '1', RELAY_IDENTITY_SECRET: IDENTITY_SECRET, RELAY_TRUST_PROXY: '127.0.0.1', ...env });
      relays.push(relay);
      return relay;
    };
    const from = (address: string) => ({ headers: { 'x-forwarded-for': address, 'cf-connecting-ip': address } });
    const emailsOf = (calls: Awaited<ReturnType<typeof delivered>>, path: string) =>
      calls
        .filter((call) => call.path === path && call.status === 200)
        .flatMap((call) => (call.body.people ?? call.body.activities) as { fields: Record<string, string> }[])
        .map((entry) => entry.fields['str::email']!);

    it('anonymous items from 150 /64 networks fill only their share; a signed-in visitor is accepted; new people stay within the budget', async () => {
      const key = siteKey('share');
      const relay = await start({
        RELAY_SITES: sites({ key, origins: [ORIGIN], verify: 'open' }),
        RELAY_OUTBOX_MAX_PER_SITE: String(SITE_MAX),
        RELAY_UNPROVEN_PEOPLE_PER_MINUTE: String(PEOPLE_PER_MINUTE),
        RELAY_DELIVERY_RETRY_MS: '200',
      });
      await relay.drained();
      await target().upstream.reset();
      // The platform is down: what is accepted waits in the outbox.
      await target().upstream.always({ status: 503 });
      const known = `known-${key}@example.com`;
      const anonymous: string[] = [];
      let accepted = 0;
      const started = Date.now();
      for (let round = 0; round < 2; round++) {
        await Promise.all(
          Array.from({ length: 150 }, async (_, n) => {
            const emails = [0, 1].map((i) => `anon-${key}-${n}-${round}-${i}@example.com`);
            anonymous.push(...emails);
            const batch = [
              ...emails.map((email) => identify({ 'str::email': email })),
              ...Array.from({ length: 3 }, () => track('act:cm:viewed', { 'str::email': known })),
            ];
            const response = await read(await relay.post({ key, queue: crypto.randomUUID(), batch }, from(`2001:db8:${n.toString(16)}:${round}::7`)));
            accepted += ((response.body?.results ?? []) as { status: string }[]).filter((result) => result.status === 'accepted').length;
          }),
        );
      }
      const flooded = Date.now() - started;
      expect(accepted).toBe(SITE_MAX / 2);
      // A signed-in visitor: an identify with a valid user_hash, then tracks: every item accepted.
      const me = `me-${key}@example.com`;
      const mine = [
        identify({ 'str::email': me }, { user_hash: await identityHash(IDENTITY_SECRET, 'str::email', me) }),
        ...Array.from({ length: 20 }, () => track('act:cm:viewed', { 'str::email': me })),
      ];
      const answer = await read(await relay.post({ key, queue: crypto.randomUUID(), batch: mine }, from('2001:db8:ffff::1')));
      expect(answer.status).toBe(200);
      expect((answer.body.results as { status: string }[]).map((result) => result.status)).toEqual(mine.map(() => 'accepted'));
      // Back: what was accepted is delivered; the anonymous identifies created at most the budget.
      await target().upstream.always(undefined);
      const calls = await delivered(target(), relay);
      const created = new Set(emailsOf(calls, '/v1/person/merge').filter((email) => anonymous.includes(email)));
      expect(created.size).toBeGreaterThan(0);
      expect(created.size).toBeLessThanOrEqual(PEOPLE_PER_MINUTE + Math.ceil(flooded / 10_000));
      expect(emailsOf(calls, '/v1/activities/create').filter((email) => email === me)).toHaveLength(20);
    }, 60_000);

    it('a merge the platform fails every time is dead-lettered after a bounded number of sends; every other item is delivered', async () => {
      const key = siteKey('poison');
      const relay = await start({ RELAY_SITES: sites({ key, origins: [ORIGIN], verify: 'open' }), RELAY_DELIVERY_RETRY_MS: '100' });
      await relay.drained();
      await target().upstream.reset();
      const poison = `poison-${key}@example.com`;
      await target().upstream.always({ when: poison, status: 500 });
      const email = (n: number) => (n === 7 ? poison : `ok-${key}-${n}@example.com`);
      // 30 browsers identify (one of them the poisoned email) and track, in one request each.
      const answers = await Promise.all(
        Array.from({ length: 30 }, async (_, n) =>
          read(
            await relay.post(
              { key, queue: `q-${n}`, batch: [identify({ 'str::email': email(n) }), track('act:cm:viewed', { 'str::email': `t-${key}-${n}@example.com` })] },
              from(`2001:db8:${n.toString(16)}::1`),
            ),
          ),
        ),
      );
      expect(answers.every((response) => response.status === 200)).toBe(true);
      // Its waits between sends: 0.1, 0.3, 0.9, 2.7 s (1, 3, 9, 27 s by default). Workers' objects read
      // the deployment's RELAY_DELIVERY_RETRY_MS (test/workerd/wrangler.toml), not this relay's.
      await expect.poll(async () => (await relay.deadLetters()).length, { timeout: 100_000, interval: 500 }).toBe(1);
      const calls = await delivered(target(), relay);
      const merged = emailsOf(calls, '/v1/person/merge');
      for (let n = 0; n < 30; n++)
        if (n !== 7)
          expect(
            merged.filter((address) => address === email(n)),
            email(n),
          ).toHaveLength(1);
      expect(emailsOf(calls, '/v1/activities/create')).toHaveLength(30);
      // The poisoned merge went at most 5 times, then it is a dead letter with the platform's answer.
      expect(calls.filter((call) => call.path === '/v1/person/merge' && call.status === 500).length).toBeLessThanOrEqual(5);
      expect((await relay.deadLetters()).map((letter) => letter.reason)).toEqual([expect.stringMatching(/^unanswered: .*500/)]);
    }, 150_000);
  });
}
