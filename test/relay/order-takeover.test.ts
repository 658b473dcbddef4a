// Identify before track after a takeover: two deliverers share one real redis-server, the leader
// sends a browser's merge into a call that never answers and dies in it (nothing it asks of Redis
// afterwards happens, as after a SIGKILL: its lease and its lead lock just run out). The standby
// knows nothing of that merge, yet the browser's track, accepted while the merge was in flight,
// reaches the platform only after the merge was applied. Short lease and call settings keep the
// takeover within a few seconds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Outbox, OutboxItem, OutboxStore } from '../../src/relay/state/outbox.js';
import { createRedisOutbox } from '../../src/relay/state/redis-outbox.js';
import { type RunningRedis, redisAvailable, startRedis, TEST_COMMAND_TIMEOUT_MS } from '../support/redis.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { type RecordedCall, recordingDeliverer, startViewedEmulator, storeItem } from './support/recorded-calls.js';

const KEY = 'order-takeover-key';
const DAY = 24 * 3600_000;

describe.runIf(redisAvailable('the takeover order test on Redis (test/relay/order-takeover.test.ts)'))('a standby that takes over on Redis', () => {
  let emulator: RunningEmulator;
  let redis: RunningRedis;
  beforeAll(async () => {
    [emulator, redis] = await Promise.all([startViewedEmulator(KEY), startRedis()]);
  }, 30_000);
  afterAll(async () => {
    await emulator?.close();
    await redis?.close();
  });

  /** A deliverer named `by` whose every platform call is recorded in `calls`; `onCall` is told as each leaves. */
  const deliverer = (by: string, outbox: Outbox, store: OutboxStore, calls: RecordedCall[], onCall: () => void = () => {}) =>
    recordingDeliverer({
      by,
      emulator,
      apiKey: KEY,
      site: 'pk_t',
      calls,
      onCall,
      outbox,
      pacer: store.pacer(10),
      // The lead outlasts a call (≤ 2 s for a pacer slot + 1 s + 1 s): less than a lease lasts, so
      // the standby leads while the dead leader's lease still holds the merge.
      leadTtlMs: 1_000,
      leaseMs: 5_500,
      callTimeoutMs: 1_000,
    });

  const item = (kind: OutboxItem['kind'], email: string, browser: string) => storeItem('pk_t', kind, email, browser, { 'str::first': 'Ada' });

  it("sends a browser's track only after the identify a dead leader left in flight was applied", async () => {
    const prefix = `takeover-${crypto.randomUUID().slice(0, 8)}:`;
    const [first, second] = await Promise.all([
      createRedisOutbox(redis.url, { prefix, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS }),
      createRedisOutbox(redis.url, { prefix, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS }),
    ]);
    const calls: RecordedCall[] = [];
    let dead = false;
    // Once its first call leaves, nothing the leader asks of Redis happens any more.
    const deadOutbox = new Proxy(first.outbox, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? (...args: unknown[]) => (dead ? new Promise(() => {}) : value.apply(target, args)) : value;
      },
    });
    const leader = deliverer('leader', deadOutbox, first, calls, () => (dead = true));
    const standby = deliverer('standby', second.outbox, second, calls);
    const run = crypto.randomUUID().slice(0, 8);
    const [ada, bo] = [`ada-${run}@example.com`, `bo-${run}@example.com`];
    try {
      // The platform holds the leader's merge call and never applies it.
      emulator.emulator.setFaults({ 'person/merge': { drop: 'hang' } });
      leader.start();
      await expect.poll(() => second.outbox.lead('probe', Date.now(), 1)).toBe(false);
      standby.start();
      await first.outbox.accept([item('merge', ada, 'browser-ada')], Date.now(), DAY);
      await expect.poll(() => dead, { timeout: 5_000 }).toBe(true);
      // The fault stays until the leader's call has ended by its own timeout: on a loaded machine a
      // call that left may reach the platform after a fault lifted at once, and be applied.
      const leaderCallEnded = () => calls.some((call) => call.by === 'leader' && call.answered !== Number.POSITIVE_INFINITY);
      await expect.poll(leaderCallEnded, { timeout: 5_000 }).toBe(true);
      emulator.emulator.setFaults({});
      // While the dead leader's merge is in flight, Ada's browser tracks, and so does Bo's.
      await second.outbox.accept([item('activity', ada, 'browser-ada'), item('activity', bo, 'browser-bo')], Date.now(), DAY);
      await standby.drained({ timeoutMs: 15_000 });

      const applied = calls.find((call) => call.endpoint === 'person/merge' && call.status === 200 && call.emails.includes(ada));
      const track = calls.find((call) => call.endpoint === 'activities/create' && call.emails.includes(ada));
      // The standby sent the merge again (a merge may go twice) and Ada's track only once it was applied.
      expect(applied?.by).toBe('standby');
      expect(track?.by).toBe('standby');
      expect(track!.left).toBeGreaterThanOrEqual(applied!.answered);
      // Bo's browser had no identify waiting: nothing held his track back.
      expect(calls.filter((call) => call.endpoint === 'activities/create').flatMap((call) => call.emails)).toEqual(expect.arrayContaining([ada, bo]));
      const person = [...emulator.emulator.state.people.values()].find((p) => p.fields['str::email'] === ada);
      expect(person?.fields['str::first']).toBe('Ada');
      expect(person?.events).toHaveLength(1);
    } finally {
      await standby.stop();
      await Promise.all([first.close(), second.close()]);
    }
  }, 30_000);
});
