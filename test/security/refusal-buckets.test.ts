// The refusal buckets behave the same on every limiter a deployment may share: a visitor is cut
// off after a few refusals however many relays count them, refusals found later by the deliverer
// count too, looking at a bucket takes nothing from it, and the site's bucket closes only the
// site's guard (which holds back unproven items), never another visitor's own bucket.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chargeDelivered,
  createBindingLimiter,
  createMemoryLimiter,
  type RateLimiter,
  refusalWait,
  siteGuardWait,
  VISITOR_REFUSALS,
  visitorKey,
} from '../../src/relay/core/limits.js';
import { createRedisState } from '../../src/relay/state/redis.js';
import { type RunningRedis, redisAvailable, startRedis } from '../support/redis.js';

let redis: RunningRedis | undefined;
const hasRedis = redisAvailable('refusal buckets on Redis (test/security/refusal-buckets.test.ts)');
beforeAll(async () => {
  if (hasRedis) redis = await startRedis();
});
afterAll(async () => {
  await redis?.close();
});

const kinds: { name: string; open(): Promise<RateLimiter> }[] = [
  { name: 'memory', open: async () => createMemoryLimiter() },
  // The Workers binding only takes; refusal buckets stay with its per-isolate fallback.
  {
    name: 'Workers binding',
    open: async () =>
      createBindingLimiter(
        {
          limit: async ({ key }) => {
            if (key.startsWith('refusals:')) throw new Error(`the binding was asked about ${key}`);
            return { success: true };
          },
        },
        60,
      ),
  },
  // The cases move time by hand: Redis takes their `now` instead of its TIME (callerTime).
  ...(hasRedis ? [{ name: 'Redis', open: async () => (await createRedisState(redis!.url, { prefix: `r${Math.random()}:`, callerTime: true })).limiter }] : []),
];

describe.each(kinds)('refusal buckets on $name', ({ open }) => {
  const site = 'pk_shop';
  const visitor = visitorKey(site, '198.51.100.7');
  const other = visitorKey(site, '198.51.100.8');

  it(`cuts a visitor off after ${VISITOR_REFUSALS.burst} refusals, and only that visitor`, async () => {
    const limiter = await open();
    const now = 1_000_000;
    for (let i = 0; i < VISITOR_REFUSALS.burst; i++) {
      // looking takes nothing: as often as we like
      expect(await refusalWait(limiter, visitor, now)).toBe(0);
      expect(await refusalWait(limiter, visitor, now)).toBe(0);
      await chargeDelivered(limiter, [{ site, visitor }], false, now);
    }
    const wait = await refusalWait(limiter, visitor, now);
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(1000 / VISITOR_REFUSALS.perSecond);
    expect(await refusalWait(limiter, other, now)).toBe(0);
    // refilled in time
    expect(await refusalWait(limiter, visitor, now + 1000 / VISITOR_REFUSALS.perSecond + 1)).toBe(0);
  });

  it('charges refusals found after the answer (the deliverer) to each visitor, into debt, and the site per call refused whole', async () => {
    const limiter = await open();
    const now = 4_000_000;
    const entries = [visitor, visitor, visitor, visitor, visitor, other].map((key) => ({ site, visitor: key }));
    await chargeDelivered(limiter, entries, false, now);
    // five refusals against a bucket of three: the visitor waits for the debt too
    expect(await refusalWait(limiter, visitor, now)).toBeGreaterThan(2 * (1000 / VISITOR_REFUSALS.perSecond));
    expect(await refusalWait(limiter, other, now)).toBe(0);
    // entries refused among good ones leave the site's guard open; calls refused as a whole, across
    // many visitors, close it, but cut no other visitor off
    expect(await siteGuardWait(limiter, site, now)).toBe(0);
    for (let i = 0; i < 10; i++) await chargeDelivered(limiter, [{ site, visitor: visitorKey(site, `203.0.113.${i}`) }], true, now);
    expect(await siteGuardWait(limiter, site, now)).toBeGreaterThan(0);
    expect(await refusalWait(limiter, visitorKey(site, '192.0.2.1'), now)).toBe(0);
  });
});
