// The outbox's limits as a browser meets them, against the real emulator over HTTP, on each
// outbox (memory, an SQLite file, a real redis-server): past its visitor's limit /collect answers
// `retry` with Retry-After (200 when some items went through, 503 outbox_full when none did),
// other visitors are still taken, and once the outbox drains the items sent again arrive once.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { createRelayHandlers } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import type { RelayObserver } from '../../src/relay/core/observe.js';
import { drainSeconds } from '../../src/relay/ingest/handoff.js';
import { idleRoom, pendingCount, roomSeconds } from '../../src/relay/ingest/idle-room.js';
import { createMemoryOutbox } from '../../src/relay/state/memory-outbox.js';
import type { Outbox } from '../../src/relay/state/outbox.js';
import { createRelayMetrics } from '../../src/relay/ops/metrics.js';
import { createRedisOutbox } from '../../src/relay/state/redis-outbox.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { type RunningRedis, redisAvailable, startRedis, TEST_COMMAND_TIMEOUT_MS } from '../support/redis.js';

const KEY = 'limits-test-key';
const ORIGIN = 'https://shop.example.com';

let emulator: RunningEmulator;
let redis: RunningRedis | undefined;
const withRedis = redisAvailable('the outbox limits on Redis (test/relay/outbox-limits.test.ts)');
beforeAll(async () => {
  emulator = await startEmulator({ port: 0, key: KEY, plan: 'business' });
  const response = await fetch(`${emulator.url}/v1/definitions/activity/create`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY },
    body: JSON.stringify({ name: 'viewed', attributes: [] }),
  });
  expect(response.ok).toBe(true);
  if (withRedis) redis = await startRedis();
});
afterAll(async () => {
  await emulator?.close();
  await redis?.close();
});

const BACKENDS: { name: string; open(): Promise<{ outbox: Outbox; close(): Promise<void> }> }[] = [
  { name: 'memory', open: async () => ({ outbox: createMemoryOutbox(), close: async () => {} }) },
  { name: 'SQLite', open: () => createSqliteOutbox(join(mkdtempSync(join(tmpdir(), 'cdp-limits-')), 'relay-state.db')) },
  ...(withRedis
    ? [{ name: 'Redis', open: () => createRedisOutbox(redis!.url, { prefix: `limits-${crypto.randomUUID()}:`, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS }) }]
    : []),
];

const track = (email: string) => ({
  id: crypto.randomUUID(),
  type: 'track',
  ts: new Date().toISOString(),
  activity_id: 'act:cm:viewed',
  person: { 'str::email': email },
});
const eventsOf = (email: string) => [...emulator.emulator.state.people.values()].filter((p) => p.fields['str::email'] === email).flatMap((p) => p.events);

/** A relay on `outbox` whose visitors may each have 5 entries waiting, with `env` added; nothing is delivered until a test drains. */
const relayOn = (outbox: Outbox, env: Record<string, string>, observer?: RelayObserver) => {
  const config = parseConfig({
    CDP_API_KEY: KEY,
    CDP_BASE_URL: emulator.url,
    RELAY_SITES: JSON.stringify([{ key: 'pk_l', name: 'shop', origins: [ORIGIN], verify: 'open', visitor_rate_limit: { per_second: 10_000, burst: 10_000 } }]),
    RELAY_LOG: 'off',
    RELAY_OUTBOX_MAX_PER_VISITOR: '5',
    // Nothing is delivered until the test drains: the outbox fills as a flood would fill it.
    RELAY_DELIVERY_WAIT_MS: '60000',
    ...env,
  });
  const handlers = createRelayHandlers(config, { outbox, ...(observer ? { observer } : {}), clientInfo: (c) => ({ ip: c.req.header('x-test-ip') }) });
  const post = (ip: string, batch: unknown[]) =>
    handlers.app.request('/collect', {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain', 'x-test-ip': ip },
      body: JSON.stringify({ key: 'pk_l', batch }),
    });
  return { config, handlers, post };
};

describe.each(BACKENDS)('the outbox limits on $name', (backend) => {
  it('answers retry with Retry-After past a visitor’s limit, takes other visitors, and loses nothing once drained', async () => {
    const store = await backend.open();
    const metrics = createRelayMetrics({
      outbox: store.outbox,
      limits: parseConfig({ CDP_API_KEY: KEY, RELAY_OUTBOX_MAX_PER_VISITOR: '5' }).outboxLimits,
      processMetrics: false,
    });
    // The visitor's own limit whatever waits: no idle room (the case below has it).
    const { handlers, post } = relayOn(store.outbox, { RELAY_OUTBOX_IDLE_SECONDS: '0' }, metrics.observer);
    try {
      const email = `flood-${crypto.randomUUID()}@example.com`;
      const items = Array.from({ length: 8 }, () => track(email));
      // Five fit; three wait in the browser, told when to come back: when the five will have gone
      // at the key's pace (10 calls of 100 a second: within a second), not a fixed 5 s.
      const first = await post('198.51.100.7', items);
      expect(first.status).toBe(200);
      expect(first.headers.get('retry-after')).toBe('1');
      const statuses = ((await first.json()) as { results: { status: string }[] }).results.map((result) => result.status);
      expect(statuses).toEqual([...Array(5).fill('accepted'), ...Array(3).fill('retry')]);
      // Nothing went through: 503, the documented error shape, every item kept.
      const again = await post('198.51.100.7', items.slice(5));
      expect(again.status).toBe(503);
      expect(again.headers.get('retry-after')).toBe('1');
      const body = (await again.json()) as { error: { code: string; details: { status: string }[] } };
      expect(body.error.code).toBe('outbox_full');
      expect(body.error.details.map((detail) => detail.status)).toEqual(['retry', 'retry', 'retry']);
      // Another address of the same site is taken.
      const other = `other-${crypto.randomUUID()}@example.com`;
      const otherItem = track(other);
      expect(((await (await post('203.0.113.9', [otherItem])).json()) as { results: { status: string }[] }).results[0]!.status).toBe('accepted');
      const scrape = (await metrics.render()).body;
      expect(scrape).toMatch(/cdp_edge_outbox_full_items_total\{site="shop"\} 6/);
      expect(scrape).toMatch(/cdp_edge_outbox_limit\{scope="visitor"\} 5/);
      // Drained, the browser sends the three again: each arrives once.
      await handlers.drained({ timeoutMs: 30_000 });
      const resent = await post('198.51.100.7', items);
      const results = ((await resent.json()) as { results: { status: string }[] }).results.map((result) => result.status);
      expect(results).toEqual([...Array(5).fill('duplicate'), ...Array(3).fill('accepted')]);
      await handlers.drained({ timeoutMs: 30_000 });
      expect(eventsOf(email)).toHaveLength(8);
      expect(eventsOf(other)).toHaveLength(1);
    } finally {
      await handlers.close();
      await store.close();
    }
  }, 60_000);
});

describe.each(BACKENDS)('the idle room on $name', (backend) => {
  it('takes a visitor past its limit while the outbox holds less than the idle room, holds it to its limit once others fill it, and loses nothing', async () => {
    const store = await backend.open();
    // 1 call of 100 a second for 0.2 s: an idle room of 20 entries.
    const relay = relayOn(store.outbox, { RELAY_PLATFORM_RATE: '1', RELAY_OUTBOX_IDLE_SECONDS: '0.2' });
    const handlers = relay.handlers;
    const post = async (ip: string, batch: unknown[]) => {
      const response = await relay.post(ip, batch);
      const body = (await response.json()) as { results?: { status: string }[]; error?: { details: { status: string }[] } };
      return { retryAfter: response.headers.get('retry-after'), statuses: (body.results ?? body.error?.details ?? []).map((result) => result.status) };
    };
    try {
      // Alone, a heavy sender is taken past its 5 up to the room of 20, told to come back once 10 more fit (at 100 a second: 1 s).
      const heavy = `heavy-${crypto.randomUUID()}@example.com`;
      const items = Array.from({ length: 30 }, () => track(heavy));
      const first = await post('198.51.100.7', items);
      expect(first.statuses).toEqual([...Array(20).fill('accepted'), ...Array(10).fill('retry')]);
      expect(first.retryAfter).toBe('1');
      // The room is the key's, never another visitor's: a second visitor is still taken to its own limit.
      const other = `other-${crypto.randomUUID()}@example.com`;
      const otherItems = Array.from({ length: 6 }, () => track(other));
      expect((await post('203.0.113.9', otherItems)).statuses).toEqual([...Array(5).fill('accepted'), 'retry']);
      // With 25 waiting, past the room, a third visitor past its limit is held to it.
      const third = `third-${crypto.randomUUID()}@example.com`;
      const thirdItems = Array.from({ length: 8 }, () => track(third));
      expect((await post('192.0.2.4', thirdItems)).statuses).toEqual([...Array(5).fill('accepted'), ...Array(3).fill('retry')]);
      // Drained, the browsers send everything again: each arrives once.
      await handlers.drained({ timeoutMs: 30_000 });
      expect((await post('198.51.100.7', items)).statuses).toEqual([...Array(20).fill('duplicate'), ...Array(10).fill('accepted')]);
      await post('203.0.113.9', otherItems);
      await post('192.0.2.4', thirdItems);
      await handlers.drained({ timeoutMs: 30_000 });
      expect(eventsOf(heavy)).toHaveLength(30);
      expect(eventsOf(other)).toHaveLength(6);
      expect(eventsOf(third)).toHaveLength(8);
    } finally {
      await handlers.close();
      await store.close();
    }
  }, 60_000);
});

describe('the pending count the idle room reads', () => {
  it('is read again once older than its age (Workers: a read asks every outbox object), by one caller at a time, none waiting on another’s read', async () => {
    const outbox = createMemoryOutbox();
    let reads = 0;
    const counted = {
      ...outbox,
      stats: () => {
        reads++;
        return outbox.stats();
      },
    };
    const read = pendingCount(counted, 1_000);
    const one = () =>
      outbox.accept([{ site: 'pk_l', id: crypto.randomUUID(), kind: 'activity', entry: {}, browser: 'b', visitor: 'v', accepted: 0 }], 0, 60_000);
    await one();
    // Two at once: the first reads, the second is told it is not known yet rather than waiting on the first's read.
    expect(await Promise.all([read(0), read(0)])).toEqual([1, undefined]);
    await one();
    // Within the second: the count read then; after it, read again.
    expect(await read(999)).toBe(1);
    expect(reads).toBe(1);
    expect(await read(1_000)).toBe(2);
    expect(reads).toBe(2);
    // Age 0 (Node): every call reads.
    const fresh = pendingCount(counted, 0);
    await fresh(0);
    await fresh(0);
    expect(reads).toBe(4);
  });
});

describe('the Retry-After of items the outbox had no room for', () => {
  it('is when what waits will have gone at the key’s pace: a visitor alone gets the whole pace, a long backlog a later time, 60 s at most', () => {
    // A visitor's 1,000 entries alone at 10 calls of 100 a second: gone in a second, so it sends 1,000 a second.
    expect(drainSeconds(1_000, 10)).toBe(1);
    expect(drainSeconds(1, 10)).toBe(1);
    // 20,000 waiting: 20 s at 10 calls a second, 2 s at 100; the default outbox of 200,000 full: 60 s at most.
    expect(drainSeconds(20_000, 10)).toBe(20);
    expect(drainSeconds(20_000, 100)).toBe(2);
    expect(drainSeconds(200_000, 10)).toBe(60);
  });
  it('is, with idle room, when the refused items will fit in it: sooner than the whole backlog', () => {
    // 5,000 waiting at 10 calls of 100 a second, 100 refused, a room of 5,000: 100 must go first, within a second (not the 5 s of the whole).
    expect(roomSeconds(5_000, 100, 10, 5_000)).toBe(1);
    expect(drainSeconds(5_000, 10)).toBe(5);
    // 9,000 waiting: 4,100 must go first, 5 s.
    expect(roomSeconds(9_000, 100, 10, 5_000)).toBe(5);
    expect(idleRoom(10, 5)).toBe(5_000);
  });
});
