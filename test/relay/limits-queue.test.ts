// A visitor just over its rate is slowed, not refused (`queue_ms`, core/limits.ts `Rate.queueMs`):
// a request whose token comes within the queue reserves it and is answered once it comes; past the
// queue it is refused 429 with Retry-After as before; how many requests a visitor can have waiting
// is bounded; other visitors never wait behind one visitor's queue. The arithmetic on every
// limiter (memory, which the SQLite relay uses too, and Redis's script), then over real HTTP on
// each Node state. Workers: test/workerd/limits-queue.test.ts.
import { describe, expect, it } from 'vitest';
import { createMemoryLimiter, type RateLimiter, withLimitAll } from '../../src/relay/core/limits.js';
import { createRedisState } from '../../src/relay/state/redis.js';
import { limitsRelay, limitsStates } from './support/limits-relay.js';
import { type Answer, QUEUED_VISITOR_RATE, queueCases } from './support/queue-answers.js';

const { states, redisUrl } = limitsStates('visitor queues on Redis (test/relay/limits-queue.test.ts)');
const hasRedis = states.some((state) => state.name === 'Redis');

const limiters: { name: string; open(): Promise<RateLimiter> }[] = [
  { name: 'memory', open: async () => createMemoryLimiter() },
  // A user's own limiter with `limit` alone (RelayDeps.limiter): the relay makes its `limitAll`.
  { name: 'limit-only', open: async () => withLimitAll({ limit: createMemoryLimiter().limit }) },
  // The cases move time by hand: Redis takes their `now` instead of its TIME (callerTime).
  ...(hasRedis ? [{ name: 'Redis', open: async () => (await createRedisState(redisUrl()!, { prefix: `q${Math.random()}:`, callerTime: true })).limiter }] : []),
];

describe.each(limiters)('a visitor queue on the $name limiter', ({ open }) => {
  const rate = { perSecond: 10, burst: 5, queueMs: 1_000 };
  const T = 5_000_000;

  it('serves a visitor past its burst after its token time, up to a second of tokens, then refuses with the time until a place', async () => {
    const limiter = await open();
    for (let i = 0; i < 5; i++) expect(await limiter.limit('visitor:s:a', rate, T)).toEqual({ ok: true, retryAfterMs: 0 });
    // The next ten wait 100, 200, … 1,000 ms: each for its own token.
    for (let i = 1; i <= 10; i++) expect(await limiter.limit('visitor:s:a', rate, T)).toEqual({ ok: true, retryAfterMs: 0, delayMs: 100 * i });
    // At most per_second requests wait: the eleventh is refused, told when a place comes.
    expect(await limiter.limit('visitor:s:a', rate, T)).toEqual({ ok: false, retryAfterMs: 100 });
    expect(await limiter.limit('visitor:s:a', rate, T + 50)).toMatchObject({ ok: false, retryAfterMs: 50 });
    // A token later, one more place.
    expect(await limiter.limit('visitor:s:a', rate, T + 100)).toEqual({ ok: true, retryAfterMs: 0, delayMs: 1_000 });
    expect((await limiter.limit('visitor:s:a', rate, T + 100)).ok).toBe(false);
    // Other visitors have their own buckets: served at once.
    for (let i = 0; i < 5; i++) expect(await limiter.limit(`visitor:s:b${i}`, rate, T + 100)).toEqual({ ok: true, retryAfterMs: 0 });
    // Once the debt is paid and the bucket refilled, the burst is whole again.
    for (let i = 0; i < 5; i++) expect((await limiter.limit('visitor:s:a', rate, T + 100 + 1_600)).delayMs).toBeUndefined();
  });

  it("takes a request from the visitor's bucket and the site's together or from neither, waiting for the visitor's queued token", async () => {
    const limiter = await open();
    const cap = { perSecond: 1, burst: 1 };
    const visitor = { key: 'visitor:t:a', rate };
    const site = (key: string) => ({ key: `site:${key}`, rate: cap });
    expect(await limiter.limitAll([visitor, site('t1')], T)).toEqual({ ok: true, retryAfterMs: 0 });
    // The site's cap is spent: refused with its wait, and nothing taken from the visitor, whose 4 tokens are left.
    expect(await limiter.limitAll([visitor, site('t1')], T)).toEqual({ ok: false, retryAfterMs: 1_000 });
    for (let i = 0; i < 4; i++) expect(await limiter.limit('visitor:t:a', rate, T)).toEqual({ ok: true, retryAfterMs: 0 });
    // The visitor's burst spent: its next token queued, the other site's taken at once.
    expect(await limiter.limitAll([visitor, site('t2')], T)).toEqual({ ok: true, retryAfterMs: 0, delayMs: 100 });
    // Over its own allowance (a second of tokens queued), the visitor takes nothing from a site.
    for (let i = 2; i <= 10; i++) expect(await limiter.limit('visitor:t:a', rate, T)).toEqual({ ok: true, retryAfterMs: 0, delayMs: 100 * i });
    expect(await limiter.limitAll([visitor, site('t3')], T)).toEqual({ ok: false, retryAfterMs: 100 });
    expect(await limiter.limitAll([site('t3')], T)).toEqual({ ok: true, retryAfterMs: 0 });
  });

  it('refuses at once without a queue (queue_ms 0, and the address buckets)', async () => {
    const limiter = await open();
    const plain = { perSecond: 10, burst: 5 };
    for (let i = 0; i < 5; i++) expect((await limiter.limit('address:a', plain, T)).ok).toBe(true);
    expect(await limiter.limit('address:a', plain, T)).toEqual({ ok: false, retryAfterMs: 100 });
    for (let i = 0; i < 5; i++) expect((await limiter.limit('visitor:s:z', { ...rate, queueMs: 0 }, T)).ok).toBe(true);
    expect(await limiter.limit('visitor:s:z', { ...rate, queueMs: 0 }, T)).toEqual({ ok: false, retryAfterMs: 100 });
  });
});

describe.each(states)('a visitor queue over HTTP on $name', ({ state }) => {
  // The address bucket (twice the visitor's: burst 40) lets 40 at once reach the visitor's bucket.
  const relay = limitsRelay({ site: { visitor_rate_limit: QUEUED_VISITOR_RATE }, state });

  /**
   * Sends `count` one-item requests at once from `visitor` to `to`, over connections opened first:
   * set up as they go, on a busy machine they would reach the relay spread over hundreds of ms.
   */
  const burst =
    (to: ReturnType<typeof limitsRelay>) =>
    async (visitor: string, count: number, started = Date.now()): Promise<Answer[]> => {
      await Promise.all(Array.from({ length: count }, () => to.health().then((response) => response.arrayBuffer())));
      return Promise.all(
        Array.from({ length: count }, async () => {
          const sent = Date.now() - started;
          const response = await to.post(visitor, 1);
          const body = (await response.json()) as { error?: { code: string } };
          if (response.status === 429) expect(body.error?.code).toBe('rate_limited');
          return { status: response.status, retryAfter: response.headers.get('retry-after'), ms: Date.now() - started, sent };
        }),
      );
    };

  queueCases(burst(relay), relay.waits);

  describe('a client that leaves while it waits', () => {
    // A token every 2 s: the request whose client leaves waits about 2 s for its token after the
    // burst, and the one sent after it about 2 s more (with 4 tokens a second, a burst that took
    // 2 s to answer left the leaving request nothing to wait for).
    const slow = limitsRelay({ site: { visitor_rate_limit: { per_second: 0.5, burst: 5, queue_ms: 4_000 } }, state });
    const send = async (visitor: string, count: number) => (await burst(slow)(visitor, count)).map((answer) => answer.status);

    it('takes a waiting request whole when its client leaves before its token comes', async () => {
      const visitor = '203.0.113.250';
      // The burst spent, then the request whose client leaves once the relay holds it waiting for
      // its token: left before the relay read it (100 ms after the send, under load), nothing of
      // it would be taken, rightly. Then a request waiting behind it.
      expect(await send(visitor, 5)).toEqual(Array(5).fill(200));
      const before = slow.waits().length;
      const ids = Array.from({ length: 5 }, () => crypto.randomUUID());
      const leaving = new AbortController();
      const gone = slow.post(visitor, 5, { ids, signal: leaving.signal });
      gone.catch(() => {});
      await expect.poll(() => slow.waits().length, { timeout: 10_000 }).toBe(before + 1);
      const waiting = send(visitor, 1);
      leaving.abort();
      await expect(gone).rejects.toThrow();
      expect(await waiting).toEqual([200]);
      // Sent again as the snippet would, once a token is there: every item was already taken.
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      const again = await slow.post(visitor, 5, { ids });
      expect(again.status).toBe(200);
      const body = (await again.json()) as { results: { status: string }[] };
      expect(body.results.map((result) => result.status)).toEqual(Array(5).fill('duplicate'));
    }, 30_000);
  });
});
