// Relays whose clocks differ by seconds share one redis-server: the lead lock, the leases and the
// pacer are kept on Redis's clock (TIME), so a relay running 5 s ahead or behind neither takes a
// lock or a lease that is still held nor sends out of the pace.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/relay/core/clock.js';
import type { OutboxItem, OutboxStore } from '../../src/relay/state/outbox.js';
import { createRedisOutbox } from '../../src/relay/state/redis-outbox.js';
import { TOLERANCE_MS } from '../../src/relay/state/redis-time.js';
import { type RunningRedis, redisAvailable, startRedis } from '../support/redis.js';

const hasRedis = redisAvailable('Redis time (test/relay/redis-time.test.ts)');
const skewed = (ms: number): Clock => ({ now: () => Date.now() + ms, sleep: (wait) => new Promise((resolve) => setTimeout(resolve, wait)) });
const item = (id: string): OutboxItem => ({ site: 's', id, kind: 'activity', entry: { id }, browser: 'b', visitor: 'v', accepted: Date.now() });

describe.runIf(hasRedis)('two relays with clocks 5 s apart on one Redis', () => {
  let redis: RunningRedis;
  const opened: OutboxStore[] = [];
  let prefix = 0;
  /** One relay's connection, with its own clock, on a fresh prefix shared by the pair. */
  const pair = async () => {
    const options = { prefix: `skew${++prefix}:` };
    const clocks = { behind: skewed(-5000), right: skewed(0), ahead: skewed(5000) };
    const open = async (clock: Clock) => {
      const store = await createRedisOutbox(redis.url, { ...options, clock });
      opened.push(store);
      return { store, clock };
    };
    return { behind: await open(clocks.behind), right: await open(clocks.right), ahead: await open(clocks.ahead) };
  };
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const store of opened) await store.close();
    await redis?.close();
  });

  it('one leader: a lock taken by a relay behind is not taken by one on time, nor one on time by a relay ahead', async () => {
    const { behind, right, ahead } = await pair();
    expect(await behind.store.outbox.lead('behind', behind.clock.now(), 3000)).toBe(true);
    expect(await right.store.outbox.lead('right', right.clock.now(), 3000)).toBe(false);
    expect(await ahead.store.outbox.lead('ahead', ahead.clock.now(), 3000)).toBe(false);
    // the holder renews it, on its own clock
    expect(await behind.store.outbox.lead('behind', behind.clock.now(), 3000)).toBe(true);
  });

  it('leases: entries leased by one relay are not leased again by a relay ahead while the lease runs', async () => {
    const { right, ahead } = await pair();
    await right.store.outbox.accept([item('a'), item('b'), item('c')], right.clock.now(), 3600_000);
    expect(await right.store.outbox.lease('right', 10, right.clock.now(), 3000)).toHaveLength(3);
    expect(await ahead.store.outbox.lease('ahead', 10, ahead.clock.now(), 3000)).toEqual([]);
  });

  it('the pace: a call granted to one relay makes a relay ahead wait its interval', async () => {
    const { right, ahead, behind } = await pair();
    expect(await right.store.pacer(10).take(right.clock.now(), 'deliver')).toBe(0);
    // (each relay's measure of Redis's clock is right within TOLERANCE_MS, half a round trip at worst)
    const wait = await ahead.store.pacer(10).take(ahead.clock.now(), 'deliver');
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(100 + TOLERANCE_MS);
    // and a relay behind does not wait 5 s for it
    expect(await behind.store.pacer(10).take(behind.clock.now(), 'deliver')).toBeLessThanOrEqual(100 + TOLERANCE_MS);
  });

  it('a hold asked by one relay (the platform said wait 2 s) holds the other for 2 s, not 7', async () => {
    const { behind, ahead } = await pair();
    await behind.store.pacer(10).hold(behind.clock.now() + 2000);
    const wait = await ahead.store.pacer(10).take(ahead.clock.now(), 'deliver');
    expect(wait).toBeGreaterThanOrEqual(2000 - TOLERANCE_MS);
    expect(wait).toBeLessThanOrEqual(2000 + TOLERANCE_MS);
  });
});
