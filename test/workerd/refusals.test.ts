// Refusal buckets on Workers live in the RelayState objects: a refusal charged by one isolate (the
// object whose alarm delivers) cuts its visitor off in every other isolate, and closes the site's
// guard there; the other visitors' own buckets stay full. Before, the buckets were each isolate's
// memory: a charge elsewhere was never seen by /collect.
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { chargeDelivered, createMemoryLimiter, refusalWait, SITE_REFUSALS, siteGuardWait, VISITOR_REFUSALS, visitorKey } from '../../src/relay/core/limits.js';
import { durableRefusals } from '../../src/relay/workers/refusals.js';

const T = Date.UTC(2026, 10, 27, 9);
const site = () => `pk_${crypto.randomUUID()}`;
/** Two isolates' views: each its own memory for request buckets, no cache of looks. */
const isolate = () => durableRefusals(env['RELAY_STATE'], createMemoryLimiter(), { cacheMs: 0 });

describe('refusal buckets in the RelayState objects', () => {
  it('a visitor charged in one isolate is cut off in another, and only that visitor; the bucket refills', async () => {
    const key = site();
    const visitor = visitorKey(key, '198.51.100.7');
    const other = visitorKey(key, '198.51.100.8');
    const deliverer = isolate();
    const request = isolate();
    // What the engine's onRefused does on a Durable Object's alarm: each refused entry to its visitor.
    await chargeDelivered(
      deliverer,
      Array.from({ length: VISITOR_REFUSALS.burst }, () => ({ site: key, visitor })),
      false,
      T,
    );
    expect(await refusalWait(request, visitor, T)).toBeGreaterThan(0);
    expect(await refusalWait(request, other, T)).toBe(0);
    expect(await refusalWait(request, visitor, T + 1000 / VISITOR_REFUSALS.perSecond + 1)).toBe(0);
  });

  it("refused calls close the site's guard for every isolate, not any other visitor's bucket", async () => {
    const key = site();
    const one = isolate();
    const two = isolate();
    expect(await siteGuardWait(two, key, T)).toBe(0);
    // What onRefused does for calls the platform refused as a whole: the site once per call.
    for (let i = 0; i < SITE_REFUSALS.burst; i++) await chargeDelivered(one, [{ site: key, visitor: visitorKey(key, `203.0.113.${i}`) }], true, T);
    expect(await siteGuardWait(two, key, T)).toBeGreaterThan(0);
    expect(await refusalWait(two, visitorKey(key, '192.0.2.1'), T)).toBe(0);
  });

  it('request buckets stay with the isolate: a rate limit is never a Durable Object call', async () => {
    const limiter = durableRefusals(env['RELAY_STATE']);
    await expect(limiter.limit('visitor:pk:1.2.3.4', { perSecond: 1, burst: 1 }, T)).rejects.toThrow(/refusal buckets only/);
  });
});
