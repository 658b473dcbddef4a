// Relays whose clocks differ by seconds, or step, share one redis-server: the lead lock, the
// leases and the pacer are kept on Redis's clock (each script reads TIME), so a relay running 5 s
// ahead or behind, or whose clock jumps between two calls, neither takes a lock or a lease that is
// still held nor sends out of the pace.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/relay/core/clock.js';
import type { OutboxItem, OutboxStore } from '../../src/relay/state/outbox.js';
import { paceInterval } from '../../src/relay/state/pace.js';
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
  const opened: OutboxStore[] = [];
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
      await behind.store.pacer(10).hold(behind.now() + 2000);
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
    await stepping.store.pacer(10).hold(stepping.now() + 2000);
    const held = await steady.store.pacer(10).take(steady.now(), 'deliver');
    expect(held).toBeGreaterThanOrEqual(2000 - CALL_MS);
    expect(held).toBeLessThanOrEqual(2000);
    expect(await stepping.store.outbox.lead('stepping', stepping.now(), 3000)).toBe(false);
    expect(await outbox.lead('steady', steady.now(), 3000)).toBe(true);
  });
});
