// A crowd at full speed: each visitor has its own bucket, and with no site-wide cap (unless a site
// sets one) thousands of visitors at once draw no 429. Nothing here depends on how fast the relay
// answers (a slower relay draws fewer 429s, not more), so it runs in the pool beside other files;
// the limits that time themselves against the clock are in limits.test.ts.
import { describe, expect, it } from 'vitest';
import { defaultLimitsRelay } from './support/limits-relay.js';

describe('the default limits over HTTP, for a crowd', () => {
  const post = defaultLimitsRelay();

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
});
