// Rate limits a real site can live with: each visitor has its own bucket, no site-wide cap unless
// a site sets one, and every 429 says when to come back. Over real HTTP through a trusted proxy's
// X-Forwarded-For, as a relay behind a load balancer sees its visitors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/relay/core/config.js';
import { createMemoryLimiter, refill } from '../../src/relay/core/limits.js';
import { type RunningRelay, startRelay } from '../../src/relay/node.js';
import { startTestUpstream, type TestUpstream } from './support/upstream.js';

const KEY = 'limits-platform-key';
const ORIGIN = 'https://shop.example.com';

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
});

describe('the default limits over HTTP', () => {
  let upstream: TestUpstream;
  let relay: RunningRelay;
  beforeAll(async () => {
    upstream = await startTestUpstream({ key: KEY });
    const config = parseConfig({
      CDP_API_KEY: KEY,
      CDP_BASE_URL: upstream.url,
      RELAY_SITES: JSON.stringify([{ key: 'pk_busy', origins: [ORIGIN], verify: 'open' }]),
      RELAY_TRUST_PROXY: '127.0.0.1',
      RELAY_LOG: 'off',
    });
    relay = await startRelay({ port: 0, config });
  });
  afterAll(async () => {
    await relay?.close();
    await upstream?.close();
  });

  const post = (visitor: string, items = 10) =>
    fetch(`${relay.url}/collect`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain', 'x-forwarded-for': visitor },
      body: JSON.stringify({
        key: 'pk_busy',
        batch: Array.from({ length: items }, () => ({
          id: crypto.randomUUID(),
          type: 'track',
          ts: new Date().toISOString(),
          activity_id: 'act:cm:viewed',
          person: { 'str::email': `${visitor}@example.com` },
        })),
      }),
    });

  it('lets 2,000 visitors send three 10-item batches each at full speed without a single 429', async () => {
    const visitors = Array.from({ length: 2000 }, (_, i) => `198.51.${Math.floor(i / 250)}.${i % 250}`);
    const statuses = new Map<number, number>();
    let next = 0;
    // 64 connections at once, each taking the next visitor's three requests back to back.
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < visitors.length) {
          const visitor = visitors[next++]!;
          for (let i = 0; i < 3; i++) {
            const response = await post(visitor);
            await response.arrayBuffer();
            statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          }
        }
      }),
    );
    expect(Object.fromEntries(statuses)).toEqual({ 200: 6000 });
  }, 120_000);

  it('answers one address sending 100 requests a second with 429 and Retry-After', async () => {
    const statuses: number[] = [];
    const retryAfter: string[] = [];
    const started = Date.now();
    // 100 requests a second for 1.5 s, paced.
    for (let i = 0; i < 150; i++) {
      const wait = started + i * 10 - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const response = await post('203.0.113.9', 1);
      statuses.push(response.status);
      if (response.status === 429) {
        retryAfter.push(response.headers.get('retry-after') ?? '');
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
      } else await response.arrayBuffer();
    }
    const ok = statuses.filter((status) => status === 200).length;
    // A burst of 50, then 10 a second: about 65 of 150 get through.
    expect(ok).toBeGreaterThanOrEqual(50);
    expect(ok).toBeLessThanOrEqual(80);
    expect(statuses.filter((status) => status === 429).length).toBe(150 - ok);
    expect(retryAfter.every((value) => Number(value) >= 1)).toBe(true);
    // Other visitors of the same site are not held back by it.
    expect((await post('203.0.113.10')).status).toBe(200);
  }, 30_000);
});
