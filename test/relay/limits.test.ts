// Rate limits a real site can live with: each visitor has its own bucket, no site-wide cap unless
// a site sets one (a crowd at full speed: limits-crowd.test.ts), and every 429 says when to come
// back. Over real HTTP through a trusted proxy's X-Forwarded-For, as a relay behind a load
// balancer sees its visitors.
import { describe, expect, it } from 'vitest';
import { createMemoryLimiter, refill } from '../../src/relay/core/limits.js';
import { defaultLimitsRelay } from './support/limits-relay.js';

describe('token buckets', () => {
  it('lets a burst through, then one request per refill, and says how long to wait', () => {
    const rate = { perSecond: 2, burst: 3 };
    let bucket: Parameters<typeof refill>[0];
    const taken: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      const result = refill(bucket, rate, 1000);
      bucket = result.bucket;
      taken.push(result.ok);
      if (!result.ok) expect(result.retryAfterMs).toBe(500);
    }
    expect(taken).toEqual([true, true, true, false]);
    expect(refill(bucket, rate, 1500).ok).toBe(true);
  });

  it('keeps at most maxKeys buckets, dropping the least recently used, which starts full again', async () => {
    const limiter = createMemoryLimiter({ maxKeys: 3 });
    const rate = { perSecond: 1, burst: 1 };
    for (const key of ['a', 'b', 'c']) expect((await limiter.limit(key, rate, 0)).ok).toBe(true);
    expect((await limiter.limit('a', rate, 0)).ok).toBe(false); // a is now the most recently used
    expect((await limiter.limit('d', rate, 0)).ok).toBe(true); // evicts b
    expect(limiter.size()).toBe(3);
    expect((await limiter.limit('b', rate, 0)).ok).toBe(true); // b forgotten: full again
    expect((await limiter.limit('a', rate, 0)).ok).toBe(false);
  });

  it('keeps no bucket for a look at a key that has none, so a crowd of new visitors looking does not push out a bucket in debt', async () => {
    const limiter = createMemoryLimiter({ maxKeys: 3 });
    const refusals = { perSecond: 1 / 20, burst: 3 };
    // One visitor drew four refusals: its bucket is in debt.
    expect((await limiter.limit('refusals:x', refusals, 0, 4)).ok).toBe(false);
    // Every request looks at its own visitor's refusals: new visitors, none of them refused.
    for (const key of ['refusals:a', 'refusals:b', 'refusals:c', 'refusals:d']) {
      expect(await limiter.limit(key, refusals, 1000, 0)).toEqual({ ok: true, retryAfterMs: 0 });
    }
    expect(limiter.size()).toBe(1);
    // The refused visitor is still held back (forgotten, its bucket would start full again).
    const look = await limiter.limit('refusals:x', refusals, 1000, 0);
    expect(look.ok).toBe(false);
    expect(look.retryAfterMs).toBe(39_000);
  });

  it('keeps no bucket that refilled: 100,000 visitors passing by leave a few hundred, and one short of tokens among them is still held back', async () => {
    const limiter = createMemoryLimiter();
    const rate = { perSecond: 10, burst: 50 };
    // One visitor spends its whole burst at once.
    for (let i = 0; i < 50; i++) expect((await limiter.limit('heavy', rate, 0)).ok).toBe(true);
    // 100,000 visitors, one request each, 1,000 a second: each bucket is full again 100 ms later.
    let most = 0;
    for (let n = 0; n < 100_000; n++) {
      expect((await limiter.limit(`visitor:${n}`, rate, n)).ok).toBe(true);
      most = Math.max(most, limiter.size());
      if (n === 999) {
        // 1 s on, the heavy visitor has 10 tokens again, not 50: its bucket was kept.
        const taken = [];
        for (let i = 0; i < 11; i++) taken.push((await limiter.limit('heavy', rate, n)).ok);
        expect(taken.filter(Boolean)).toHaveLength(9); // 9.99 tokens: 9 whole ones
      }
    }
    expect(most).toBeLessThan(1_000);
    // Refilled long ago: forgotten, and it starts full, as it would have been.
    expect((await limiter.limit('heavy', rate, 100_000)).ok).toBe(true);
    expect(limiter.size()).toBeLessThan(500);
  });
});

describe('the default limits over HTTP', () => {
  const post = defaultLimitsRelay();

  it('answers one address sending 100 requests a second with 429 and Retry-After', async () => {
    const statuses: number[] = [];
    const retryAfter: string[] = [];
    const answers: Promise<void>[] = [];
    const started = Date.now();
    // 100 requests a second for 1.5 s, paced, none waiting for the one before (a waiting one is answered later).
    for (let i = 0; i < 150; i++) {
      const wait = started + i * 10 - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      answers.push(
        post('203.0.113.9', 1).then(async (response) => {
          statuses.push(response.status);
          if (response.status === 429) {
            retryAfter.push(response.headers.get('retry-after') ?? '');
            expect(((await response.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
          } else await response.arrayBuffer();
        }),
      );
    }
    await Promise.all(answers);
    const ok = statuses.filter((status) => status === 200).length;
    // A burst of 50, then 10 a second, and 10 more waiting for their tokens (queue_ms 1 s): about 75 of 150.
    expect(ok).toBeGreaterThanOrEqual(60);
    expect(ok).toBeLessThanOrEqual(90);
    expect(statuses.filter((status) => status === 429).length).toBe(150 - ok);
    expect(retryAfter.every((value) => Number(value) >= 1)).toBe(true);
    // Other visitors of the same site are not held back by it.
    expect((await post('203.0.113.10')).status).toBe(200);
  }, 30_000);
});
