// Identify before track after a takeover: two deliverers share one real redis-server, the leader
// sends a browser's merge into a call that never answers and dies in it (nothing it asks of Redis
// afterwards happens, as after a SIGKILL: its lease and its lead lock just run out). The standby
// knows nothing of that merge, yet the browser's track, accepted while the merge was in flight,
// reaches the platform only after the merge was applied. Short lease and call settings keep the
// takeover within a few seconds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { systemClock } from '../../src/relay/core/clock.js';
import { parseConfig } from '../../src/relay/core/config.js';
import { createUpstream } from '../../src/relay/deliver/caller.js';
import { createDeliverer } from '../../src/relay/deliver/deliverer.js';
import { fetchTransport } from '../../src/relay/deliver/transport.js';
import type { Outbox, OutboxItem, OutboxStore } from '../../src/relay/state/outbox.js';
import { createRedisOutbox } from '../../src/relay/state/redis-outbox.js';
import { type RunningRedis, redisAvailable, startRedis } from '../support/redis.js';

const KEY = 'order-takeover-key';
const DAY = 24 * 3600_000;

interface Call {
  by: string;
  endpoint: string;
  emails: string[];
  left: number;
  answered: number;
  status: number;
}

describe.runIf(redisAvailable('the takeover order test on Redis (test/relay/order-takeover.test.ts)'))('a standby that takes over on Redis', () => {
  let emulator: RunningEmulator;
  let redis: RunningRedis;
  beforeAll(async () => {
    [emulator, redis] = await Promise.all([startEmulator({ port: 0, key: KEY, plan: 'business' }), startRedis()]);
    const response = await fetch(`${emulator.url}/v1/definitions/activity/create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY },
      body: JSON.stringify({ name: 'viewed', attributes: [] }),
    });
    expect(response.ok).toBe(true);
  }, 30_000);
  afterAll(async () => {
    await emulator?.close();
    await redis?.close();
  });

  const sites = parseConfig({
    CDP_API_KEY: KEY,
    CDP_BASE_URL: 'http://127.0.0.1:1',
    RELAY_SITES: JSON.stringify([{ key: 'pk_t', origins: ['https://shop.example.com'], verify: 'open' }]),
    RELAY_LOG: 'off',
  }).sites;

  /** A deliverer named `by` whose every platform call is recorded in `calls`; `onCall` is told as each leaves. */
  const deliverer = (by: string, outbox: Outbox, store: OutboxStore, calls: Call[], onCall: () => void = () => {}) =>
    createDeliverer({
      outbox,
      pacer: store.pacer(10),
      upstream: createUpstream({
        baseUrl: emulator.url,
        apiKey: KEY,
        transport: fetchTransport(async (input, init) => {
          const body = JSON.parse(String(init?.body)) as { people?: { fields: Record<string, string> }[]; activities?: { fields: Record<string, string> }[] };
          const call: Call = {
            by,
            endpoint: String(input).includes('person/merge') ? 'person/merge' : 'activities/create',
            emails: [...(body.people ?? []), ...(body.activities ?? [])].map((entry) => entry.fields['str::email']!),
            left: Date.now(),
            answered: Number.POSITIVE_INFINITY,
            status: 0,
          };
          calls.push(call);
          onCall();
          try {
            const response = await fetch(input, init);
            call.status = response.status;
            return response;
          } finally {
            call.answered = Date.now();
          }
        }),
        timeoutMs: 10_000,
        backoff: { until: 0 },
        now: Date.now,
      }),
      clock: systemClock,
      sites,
      waitMs: 0,
      ambiguous: 'hold',
      owner: by,
      // The lead outlasts a call (≤ 2 s for a pacer slot + 1 s + 1 s): less than a lease lasts, so
      // the standby leads while the dead leader's lease still holds the merge.
      leadTtlMs: 1_000,
      leaseMs: 5_500,
      callTimeoutMs: 1_000,
    });

  const item = (kind: OutboxItem['kind'], email: string, browser: string): OutboxItem => ({
    site: 'pk_t',
    id: crypto.randomUUID(),
    kind,
    entry: kind === 'activity' ? { activity_id: 'act:cm:viewed', fields: { 'str::email': email } } : { fields: { 'str::email': email, 'str::first': 'Ada' } },
    browser,
    visitor: 'v',
    accepted: Date.now(),
  });

  it("sends a browser's track only after the identify a dead leader left in flight was applied", async () => {
    const prefix = `takeover-${crypto.randomUUID().slice(0, 8)}:`;
    const [first, second] = await Promise.all([createRedisOutbox(redis.url, { prefix }), createRedisOutbox(redis.url, { prefix })]);
    const calls: Call[] = [];
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
