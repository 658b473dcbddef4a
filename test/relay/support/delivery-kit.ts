// What the delivery tests share: the real emulator over HTTP (with two activities defined), a real
// redis-server, the outboxes (memory, an SQLite file, Redis) a test runs on, a relay on the
// current one, and the items browsers send. Importing it registers the hooks that start and stop them.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, type TestContext } from 'vitest';
import { createRelayHandlers, type RelayDeps } from '../../../src/relay/app.js';
import { parseConfig } from '../../../src/relay/core/config.js';
import { createMemoryOutbox, createMemoryPacer } from '../../../src/relay/state/memory-outbox.js';
import type { DeliveryEvent } from '../../../src/relay/core/observe.js';
import { type EmulatorOptions, startEmulator, type RunningEmulator } from '../../../src/emulator/index.js';
import type { Outbox, OutboxItem, Pacer } from '../../../src/relay/state/outbox.js';
import { createRedisOutbox } from '../../../src/relay/state/redis-outbox.js';
import { createSqliteOutbox } from '../../../src/relay/state/sqlite-outbox.js';
import { type RunningRedis, redisAvailable, startRedis, TEST_COMMAND_TIMEOUT_MS } from '../../support/redis.js';

export const KEY = 'delivery-test-key';
export const ORIGIN = 'https://shop.example.com';
export const DAY = 24 * 3600_000;

/** A platform of its own for one test (its own breaker of refusals in a relay), with `viewed` and `bought` defined; closed after the test. */
export async function ownPlatform(options: Omit<EmulatorOptions, 'port' | 'key'> = {}): Promise<RunningEmulator> {
  const platform = await startEmulator({ port: 0, key: KEY, plan: 'business', ...options });
  for (const name of ['viewed', 'bought']) await defineActivity(platform.url, name);
  return platform;
}

/** Defines the activity `name` at the platform `url`: a call of the key (where a test's pacer counts every call, it takes its slot first). */
export async function defineActivity(url: string, name = 'viewed'): Promise<void> {
  const response = await fetch(`${url}/v1/definitions/activity/create`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY },
    body: JSON.stringify({ name, attributes: [] }),
  });
  expect(response.ok).toBe(true);
}

/** `count` tracks (`viewed`) of `site` accepted at `accepted`, each its own browser's and person's, named `<prefix>-<n>`. */
export function backlog(site: string, prefix: string, count: number, accepted: number): OutboxItem[] {
  const run = crypto.randomUUID().slice(0, 8);
  return Array.from({ length: count }, (_, n) => ({
    site,
    id: `${prefix}-${n}-${run}`,
    kind: 'activity' as const,
    entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': `${prefix}-${n}-${run}@example.com` } },
    browser: `b-${n}`,
    visitor: 'v',
    accepted,
  }));
}

export let emulator: RunningEmulator;
export const withRedis = redisAvailable('the delivery tests on Redis (test/relay: delivery-*, order, halving)');
export let redis: RunningRedis | undefined;

/**
 * Call once at the top of a test file that uses the kit: its platform (and redis-server) for the
 * file's tests, and each test's relays closed and faults cleared after it. The hooks are the
 * file's own, not registered when this module is first imported: the node project shares modules
 * between the files a worker runs (vitest.config.ts, `isolate: false`), and an import-time hook
 * would belong to the first of them only.
 */
export function useDeliveryKit(): void {
  beforeAll(async () => {
    emulator = await ownPlatform();
    if (withRedis) redis = await startRedis();
  });
  afterAll(async () => {
    await emulator?.close();
    await redis?.close();
    redis = undefined;
  });
  afterEach(async () => {
    emulator.emulator.setFaults({});
    for (const close of closing.splice(0)) await close();
  });
}

/** The outbox a test's relays share (set per backend below); a relay given its own keeps that. */
export let backing: { outbox: Outbox; pacer: Pacer } | undefined;
let opened = 0;
const BACKENDS: { name: string; open(rate: number): Promise<{ outbox: Outbox; pacer: Pacer; close(): Promise<void> }> }[] = [
  { name: 'memory', open: async (rate) => ({ outbox: createMemoryOutbox(), pacer: createMemoryPacer(rate), close: async () => {} }) },
  {
    name: 'SQLite',
    async open(rate) {
      const store = await createSqliteOutbox(join(mkdtempSync(join(tmpdir(), 'cdp-delivery-')), 'relay-state.db'));
      return { outbox: store.outbox, pacer: store.pacer(rate), close: () => store.close() };
    },
  },
  ...(withRedis
    ? [
        {
          name: 'Redis',
          async open(rate: number) {
            // Its client waits 10 s for a command, not the relay's 2 s, which these tests do not test:
            // an accept of 2,100 items in one script took 0.2-1.6 s at load 18 and timed out at more
            // (breaker-proven.test.ts).
            const store = await createRedisOutbox(redis!.url, { prefix: `delivery-${++opened}:`, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS });
            return { outbox: store.outbox, pacer: store.pacer(rate), close: () => store.close() };
          },
        },
      ]
    : []),
];

/** Registers `suite` once per outbox backend, each test on a fresh one (its pacer at `rate` platform calls a second). */
export function onEachBackend(suite: () => void, rate = 10): void {
  for (const backend of BACKENDS) {
    describe(`on ${backend.name}`, () => {
      let close: (() => Promise<void>) | undefined;
      beforeEach(async () => {
        const store = await backend.open(rate);
        backing = { outbox: store.outbox, pacer: store.pacer };
        close = store.close;
      });
      afterEach(async () => {
        for (const stop of closing.splice(0)) await stop();
        backing = undefined;
        await close?.();
      });
      suite();
    });
  }
}

/**
 * Registers `suite` once per outbox backend, every case of every backend running at the same time
 * (for cases that mostly wait out a lease or a lock on the real clock). A case opens a fresh store
 * of its own with `open(context)`, closed when the case ends, and stops what it starts with the
 * context's `onTestFinished`, never through `backing` or `closing`, which cases running together
 * would share.
 */
export function onEachBackendAtOnce(suite: (open: (context: TestContext) => Promise<{ outbox: Outbox; pacer: Pacer }>) => void, rate = 10): void {
  for (const backend of BACKENDS) {
    describe.concurrent(`on ${backend.name}`, () =>
      suite(async (context) => {
        const store = await backend.open(rate);
        context.onTestFinished(() => store.close());
        return { outbox: store.outbox, pacer: store.pacer };
      }));
  }
}

export const closing: (() => Promise<void>)[] = [];

export function relay(env: Record<string, string> = {}, deps: RelayDeps = {}) {
  const config = parseConfig({
    CDP_API_KEY: KEY,
    CDP_BASE_URL: emulator.url,
    RELAY_SITES: JSON.stringify([{ key: 'pk_d', name: 'shop', origins: [ORIGIN], verify: 'open', visitor_rate_limit: { per_second: 10_000, burst: 10_000 } }]),
    RELAY_LOG: 'off',
    ...env,
  });
  const events: DeliveryEvent[] = [];
  const handlers = createRelayHandlers(config, { observer: { delivery: (event) => events.push(event) }, ...backing, ...deps });
  closing.push(() => handlers.close());
  const post = async (batch: unknown[], extra: Record<string, unknown> = {}) => {
    const response = await handlers.app.request('/collect', {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain' },
      body: JSON.stringify({ key: 'pk_d', batch, ...extra }),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as { results: { id: string; status: string; reason?: string }[]; window: number };
  };
  return { handlers, post, events };
}

export const person = (email: string) => [...emulator.emulator.state.people.values()].filter((p) => p.fields['str::email'] === email);
export const eventsOf = (email: string) => person(email).flatMap((p) => p.events);
export const track = (email: string, ts = new Date().toISOString()) => ({
  id: crypto.randomUUID(),
  type: 'track',
  ts,
  activity_id: 'act:cm:viewed',
  person: { 'str::email': email },
});
export const identify = (email: string, first: string) => ({
  id: crypto.randomUUID(),
  type: 'identify',
  ts: new Date().toISOString(),
  fields: { 'str::email': email, 'str::first': first },
});
