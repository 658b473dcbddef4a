// One leader at a time, against a slow platform (the emulator answers every call after 2 s, so a
// call outlives the 1 s lead lock) with two relays' deliverers sharing one store: an SQLite file
// opened twice, and a real redis-server with two clients. Every call each deliverer makes is
// recorded from the moment it leaves to its answer. A standby never sends while the leader's
// calls can still land, a browser's tracks never go before its identify, and nothing arrives twice.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import type { OutboxItem, OutboxStore } from '../../src/relay/state/outbox.js';
import { createRedisOutbox } from '../../src/relay/state/redis-outbox.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { type RunningRedis, redisAvailable, startRedis, TEST_COMMAND_TIMEOUT_MS } from '../support/redis.js';
import { type RecordedCall, recordingDeliverer, startViewedEmulator, storeItem } from './support/recorded-calls.js';

const KEY = 'leadership-test-key';
/** The platform's time per call, and the lead lock's lifetime it outlasts (5 s by default: the durations are scaled down together). */
const LATENCY_MS = 2_000;
const LEAD_MS = 1_000;
const CALL_TIMEOUT_MS = 3_000;
const DAY = 24 * 3600_000;

let emulator: RunningEmulator;
beforeAll(async () => {
  emulator = await startViewedEmulator(KEY, { latencyMs: LATENCY_MS });
}, 30_000);
afterAll(() => emulator?.close());

const withRedis = redisAvailable('the leadership tests on Redis (test/relay/leadership.test.ts)');
let redis: RunningRedis | undefined;
beforeAll(async () => {
  if (withRedis) redis = await startRedis();
});
afterAll(() => redis?.close());

/** Two connections to one store, as two relay processes have. */
const STORES: { name: string; open(): Promise<[OutboxStore, OutboxStore]> }[] = [
  {
    name: 'an SQLite file',
    async open() {
      const path = join(mkdtempSync(join(tmpdir(), 'cdp-lead-')), 'relay-state.db');
      return [await createSqliteOutbox(path), await createSqliteOutbox(path)];
    },
  },
  ...(withRedis
    ? [
        {
          name: 'Redis',
          async open(): Promise<[OutboxStore, OutboxStore]> {
            const prefix = `lead-${crypto.randomUUID().slice(0, 8)}:`;
            return [
              await createRedisOutbox(redis!.url, { prefix, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS }),
              await createRedisOutbox(redis!.url, { prefix, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS }),
            ];
          },
        },
      ]
    : []),
];

/** A deliverer named `by` on `store` whose every platform call is recorded in `sent`. */
const deliverer = (by: string, store: OutboxStore, sent: RecordedCall[]) =>
  recordingDeliverer({
    by,
    emulator,
    apiKey: KEY,
    site: 'pk_l',
    calls: sent,
    outbox: store.outbox,
    pacer: store.pacer(10),
    waitMs: 50,
    leadTtlMs: LEAD_MS,
    callTimeoutMs: CALL_TIMEOUT_MS,
  });

const item = (kind: OutboxItem['kind'], email: string, browser: string) => ({
  ...storeItem('pk_l', kind, email, browser, { 'str::first': 'Ada' }),
  visitor: 'v',
});

const person = (email: string) => [...emulator.emulator.state.people.values()].filter((p) => p.fields['str::email'] === email);

// Each case mostly waits on the slow platform and the lead lock (about 5 s on the real clock): the stores' cases run at once.
describe.concurrent.each(STORES)('one leader at a time on $name, the platform taking longer per call than the lead lock lasts', ({ open }) => {
  it('a standby never sends while the leader has a call that can land; tracks follow their identify; nothing twice', async ({ expect }) => {
    const [first, second] = await open();
    const sent: RecordedCall[] = [];
    const leader = deliverer('leader', first, sent);
    const standby = deliverer('standby', second, sent);
    try {
      leader.start();
      await expect.poll(() => first.outbox.lead('probe', Date.now(), 1)).toBe(false);
      standby.start();
      const run = crypto.randomUUID().slice(0, 8);
      const [ada, bo] = [`ada-${run}@example.com`, `bo-${run}@example.com`];
      // Ada identifies: the leader's merge call takes 2 s, longer than the lead lock lasts.
      await first.outbox.accept([item('merge-create', ada, 'browser-ada')], Date.now(), DAY);
      await expect.poll(() => sent.length).toBe(1);
      // While it is in flight, Ada and Bo track: whoever sends these must wait for Ada's merge.
      await first.outbox.accept([item('activity', ada, 'browser-ada'), item('activity', bo, 'browser-bo')], Date.now(), DAY);
      await expect.poll(() => person(ada)[0]?.events.length ?? 0, { timeout: 40_000, interval: 50 }).toBe(1);
      await expect.poll(() => person(bo)[0]?.events.length ?? 0, { timeout: 20_000, interval: 50 }).toBe(1);

      // Never two deliverers' calls in flight at once.
      for (const a of sent) for (const b of sent) if (a.by !== b.by) expect(a.answered <= b.left || b.answered <= a.left, JSON.stringify([a, b])).toBe(true);
      // Ada's track left only after her merge was answered.
      const merge = sent.find((call) => call.endpoint === 'person/merge' && call.emails.includes(ada))!;
      const track = sent.find((call) => call.endpoint === 'activities/create' && call.emails.includes(ada))!;
      expect(track.left).toBeGreaterThanOrEqual(merge.answered);
      // Each item once.
      expect(sent.filter((call) => call.endpoint === 'activities/create').flatMap((call) => call.emails)).toEqual(expect.arrayContaining([ada, bo]));
      expect(sent.flatMap((call) => call.emails).sort()).toEqual([ada, ada, bo].sort());
      expect(person(ada)[0]!.fields['str::first']).toBe('Ada');
    } finally {
      await Promise.all([leader.stop(), standby.stop()]);
      await Promise.all([first.close(), second.close()]);
    }
  }, 60_000);
});
