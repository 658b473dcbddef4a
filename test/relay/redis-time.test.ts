// Relays whose clocks differ by seconds, or step, share one redis-server: the lead lock, the
// leases, the pacer, the rate-limit buckets and the remembered ids are kept on Redis's clock (each
// script reads TIME), so a relay running seconds ahead or behind, or whose clock jumps between two
// calls, neither takes a lock or a lease that is still held, nor sends out of the pace, nor
// refills a bucket early or late, nor forgets a forwarded id before its window ends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/relay/core/clock.js';
import type { OutboxItem, OutboxStore } from '../../src/relay/state/outbox.js';
import { paceInterval } from '../../src/relay/state/pace.js';
import { createRedisState, type RedisState } from '../../src/relay/state/redis.js';
import { createRedisOutbox } from '../../src/relay/state/redis-outbox.js';
import { type RunningRedis, redisAvailable, startRedis } from '../support/redis.js';

const hasRedis = redisAvailable('Redis time (test/relay/redis-time.test.ts)');
/** A clock `by` ms off the system's, which `step` moves at once (as an NTP step or a VM resume does). */
const offClock = (by: number) => {
  let off = by;
  const clock: Clock = { now: () => Date.now() + off, sleep: (wait) => new Promise((resolve) => setTimeout(resolve, wait)) };
  const step = (ms: number) => {
    off += ms;
  };
  return { clock, step };
};
const item = (id: string): OutboxItem => ({ site: 's', id, kind: 'activity', entry: { id }, browser: 'b', visitor: 'v', accepted: Date.now() });
/** One call's time on Redis, at most, between two relays' calls (the calls run one after the other). */
const CALL_MS = 500;
const INTERVAL = paceInterval(10);

describe.runIf(hasRedis)('relays with clocks seconds apart, or stepping, on one Redis', () => {
  let redis: RunningRedis;
  const opened: { close(): Promise<void> }[] = [];
  let prefix = 0;
  /** Relays on a fresh prefix, one per clock offset given, each with its own clock. */
  const relays = async <K extends string>(offsets: Record<K, number>) => {
    const options = { prefix: `skew${++prefix}:` };
    const out = {} as Record<K, { store: OutboxStore; now: () => number; step: (ms: number) => void }>;
    for (const [name, by] of Object.entries(offsets) as [K, number][]) {
      const { clock, step } = offClock(by);
      const store = await createRedisOutbox(redis.url, { ...options, clock });
      opened.push(store);
      out[name] = { store, now: clock.now, step };
    }
    return out;
  };
  /** Relays' state stores and limiters on a fresh prefix, one per clock offset given. */
  const states = async <K extends string>(offsets: Record<K, number>) => {
    const options = { prefix: `skew${++prefix}:` };
    const out = {} as Record<K, RedisState & { now: () => number }>;
    for (const [name, by] of Object.entries(offsets) as [K, number][]) {
      const { clock } = offClock(by);
      const state = await createRedisState(redis.url, { ...options, clock });
      opened.push(state.store);
      out[name] = { ...state, now: clock.now };
    }
    return out;
  };
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const store of opened) await store.close();
    await redis?.close();
  });

  describe('clocks 5 s apart', () => {
    it('one leader: a lock taken by a relay behind is not taken by one on time, nor one on time by a relay ahead', async () => {
      const { behind, right, ahead } = await relays({ behind: -5000, right: 0, ahead: 5000 });
      expect(await behind.store.outbox.lead('behind', behind.now(), 3000)).toBe(true);
      expect(await right.store.outbox.lead('right', right.now(), 3000)).toBe(false);
      expect(await ahead.store.outbox.lead('ahead', ahead.now(), 3000)).toBe(false);
      // the holder renews it, on its own clock
      expect(await behind.store.outbox.lead('behind', behind.now(), 3000)).toBe(true);
    });

    it('leases: entries leased by one relay are not leased again by a relay ahead while the lease runs', async () => {
      const { right, ahead } = await relays({ right: 0, ahead: 5000 });
      await right.store.outbox.accept([item('a'), item('b'), item('c')], right.now(), 3600_000);
      expect(await right.store.outbox.lease('right', 10, right.now(), 3000)).toHaveLength(3);
      expect(await ahead.store.outbox.lease('ahead', 10, ahead.now(), 3000)).toEqual([]);
    });

    it('the pace: a call granted to one relay makes a relay ahead wait its interval, and a relay behind no longer', async () => {
      const { right, ahead, behind } = await relays({ right: 0, ahead: 5000, behind: -5000 });
      expect(await right.store.pacer(10).take(right.now(), 'deliver')).toBe(0);
      const wait = await ahead.store.pacer(10).take(ahead.now(), 'deliver');
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(INTERVAL);
      expect(await behind.store.pacer(10).take(behind.now(), 'deliver')).toBeLessThanOrEqual(INTERVAL);
    });

    it('a hold asked by one relay (the platform said wait 2 s) holds the other for 2 s, not 7', async () => {
      const { behind, ahead } = await relays({ behind: -5000, ahead: 5000 });
      await behind.store.pacer(10).hold(behind.now() + 2000, behind.now());
      const wait = await ahead.store.pacer(10).take(ahead.now(), 'deliver');
      expect(wait).toBeGreaterThanOrEqual(2000 - CALL_MS);
      expect(wait).toBeLessThanOrEqual(2000);
    });
  });

  // Each relay used to measure its distance to Redis's clock at most once a second, so a step
  // between two measures sent times off by the whole step.
  it('a relay whose clock steps 8 s forward, then 16 s back, between two calls changes no lock, lease or pace', async () => {
    const { steady, stepping } = await relays({ steady: 0, stepping: 0 });
    const { outbox } = steady.store;
    expect(await outbox.lead('steady', steady.now(), 3000)).toBe(true);
    await outbox.accept([item('a'), item('b')], steady.now(), 3600_000);
    expect(await outbox.lease('steady', 10, steady.now(), 3000)).toHaveLength(2);
    expect(await steady.store.pacer(10).take(steady.now(), 'deliver')).toBe(0);

    stepping.step(8000);
    expect(await stepping.store.outbox.lead('stepping', stepping.now(), 3000)).toBe(false);
    expect(await stepping.store.outbox.lease('stepping', 10, stepping.now(), 3000)).toEqual([]);
    const wait = await stepping.store.pacer(10).take(stepping.now(), 'deliver');
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(INTERVAL);

    stepping.step(-16_000);
    // its hold lasts 2 s from now on Redis's clock, not 2 s from 8 s ago
    await stepping.store.pacer(10).hold(stepping.now() + 2000, stepping.now());
    const held = await steady.store.pacer(10).take(steady.now(), 'deliver');
    expect(held).toBeGreaterThanOrEqual(2000 - CALL_MS);
    expect(held).toBeLessThanOrEqual(2000);
    expect(await stepping.store.outbox.lead('stepping', stepping.now(), 3000)).toBe(false);
    expect(await outbox.lead('steady', steady.now(), 3000)).toBe(true);
  });

  describe('clocks 30 s apart', () => {
    const rate = { perSecond: 2, burst: 1 };

    it('a bucket emptied by one relay refills on Redis time: not at once for a relay ahead, not 60 s late for one behind', async () => {
      const { right, ahead, behind } = await states({ right: 0, ahead: 30_000, behind: -30_000 });
      expect((await right.limiter.limit('visitor:s:1', rate, right.now())).ok).toBe(true);
      // 30 s ahead used to count as 30 s of refill: a flooder behind such a relay got more
      const early = await ahead.limiter.limit('visitor:s:1', rate, ahead.now());
      expect(early.ok).toBe(false);
      expect(early.retryAfterMs).toBeGreaterThan(0);
      expect(early.retryAfterMs).toBeLessThanOrEqual(1000 / rate.perSecond);
      // Half a second later one token is back on Redis's clock, for the relay behind too (its clock
      // used to count from the last refill the relay ahead wrote: 60 s to wait). Waiting the refill
      // time (and 50 ms, as timers and clocks round) is the behaviour itself: a longer wait (a loaded
      // machine) refills no more than the burst of one.
      await new Promise((resolve) => setTimeout(resolve, 1000 / rate.perSecond + 50));
      expect((await behind.limiter.limit('visitor:s:1', rate, behind.now())).ok).toBe(true);
    });

    it('a forwarded id is remembered for its window on Redis time: no shorter from a relay behind, no longer from one ahead', async () => {
      const { behind, ahead } = await states({ behind: -30_000, ahead: 30_000 });
      const scope = { site: 's' };
      // A 20 s window from a relay 30 s behind used to end 10 s before it began: a resend was sent again.
      await behind.store.claim(scope, ['kept'], behind.now(), 60_000);
      await behind.store.settle(scope, { forwarded: ['kept'], until: behind.now() + 20_000, released: [] });
      expect(await ahead.store.claim(scope, ['kept'], ahead.now(), 60_000)).toEqual({ fresh: [], duplicate: ['kept'], busy: [] });
      // A 1 s window from a relay 30 s ahead used to last 31 s; it ends 1 s after it began.
      const began = Date.now();
      await ahead.store.claim(scope, ['short'], ahead.now(), 60_000);
      await ahead.store.settle(scope, { forwarded: ['short'], until: ahead.now() + 1000, released: [] });
      await expect
        .poll(async () => (await behind.store.claim(scope, ['short'], behind.now(), 60_000)).fresh, { timeout: 10_000, interval: 100 })
        .toEqual(['short']);
      // and not before: Redis and this process read one system clock (1 ms either way for rounding)
      expect(Date.now() - began).toBeGreaterThanOrEqual(1000 - 1);
    });
  });
});
