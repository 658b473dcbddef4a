/**
 * A relay with the default limits over real HTTP, through a trusted proxy's X-Forwarded-For, as a
 * relay behind a load balancer sees its visitors.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { parseConfig } from '../../../src/relay/core/config.js';
import { type RunningRelay, startRelay } from '../../../src/relay/node.js';
import { type RunningRedis, redisAvailable, startRedis } from '../../support/redis.js';
import { startTestUpstream, type TestUpstream } from './upstream.js';

const KEY = 'limits-platform-key';
const ORIGIN = 'https://shop.example.com';

/**
 * Starts such a relay before the enclosing describe's tests and closes it after them; returns
 * `post(visitor, items, { ids, signal, site })`, which sends one batch of tracks from that visitor's
 * address (to the site keyed `site`, default `pk_busy`), `health()`, which asks its `/healthz` (no
 * limit counts it), and `waits()`, when (ms since the epoch) each request that waited for a queued
 * token so far began to wait (the relay's clock sleeps for nothing else here: no erasure, no proxy). `site`: more of the site's
 * settings (e.g. `visitor_rate_limit`); `sites`: more sites, each with its own `key` and settings;
 * `state`: the relay's state (default memory).
 */
export function limitsRelay(
  options: { site?: Record<string, unknown>; sites?: readonly Record<string, unknown>[]; state?: () => { stateFile?: string; redisUrl?: string } } = {},
): {
  post: (visitor: string, items?: number, options?: { ids?: string[]; signal?: AbortSignal; site?: string }) => Promise<Response>;
  health: () => Promise<Response>;
  waits: () => readonly number[];
} {
  let upstream: TestUpstream;
  let relay: RunningRelay;
  const waits: number[] = [];
  // The system clock, counting the requests that wait for their token (ingest/guard.ts `checkRate`).
  const clock = {
    now: () => Date.now(),
    sleep: (ms: number) => {
      waits.push(Date.now());
      return new Promise<void>((resolve) => setTimeout(resolve, ms));
    },
  };
  beforeAll(async () => {
    upstream = await startTestUpstream({ key: KEY });
    const config = parseConfig({
      CDP_API_KEY: KEY,
      CDP_BASE_URL: upstream.url,
      RELAY_SITES: JSON.stringify(
        [{ key: 'pk_busy', ...options.site }, ...(options.sites ?? [])].map((site) => ({ origins: [ORIGIN], verify: 'open', ...site })),
      ),
      RELAY_TRUST_PROXY: '127.0.0.1',
      // These visitors prove no person: the share of the outbox kept for proven visitors would answer
      // a crowd of them 503 `retry` once half of it waits, a limit of its own (unproven-capacity.test.ts).
      RELAY_OUTBOX_UNPROVEN_SHARE: '1',
      RELAY_LOG: 'off',
    });
    relay = await startRelay({ port: 0, config, clock, ...options.state?.() });
  });
  afterAll(async () => {
    await relay?.close();
    await upstream?.close();
  });

  const health = () => fetch(`${relay.url}/healthz`);
  const post = (visitor: string, items = 10, { ids, signal, site = 'pk_busy' }: { ids?: string[]; signal?: AbortSignal; site?: string } = {}) =>
    fetch(`${relay.url}/collect`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain', 'x-forwarded-for': visitor },
      ...(signal ? { signal } : {}),
      body: JSON.stringify({
        key: site,
        batch: Array.from({ length: items }, (_, i) => ({
          id: ids?.[i] ?? crypto.randomUUID(),
          type: 'track',
          ts: new Date().toISOString(),
          activity_id: 'act:cm:viewed',
          person: { 'str::email': `${visitor}@example.com` },
        })),
      }),
    });
  return { post, health, waits: () => waits };
}

/** {@link limitsRelay}'s `post`, with the default limits. */
export const defaultLimitsRelay = (): ReturnType<typeof limitsRelay>['post'] => limitsRelay().post;

/** The state of a {@link limitsRelay}: where its buckets live. */
export interface LimitsState {
  name: string;
  state(): { stateFile?: string; redisUrl?: string };
}

/**
 * The Node states a relay keeps its buckets in, for `describe.each`: memory, a SQLite file (its
 * buckets stay in the process) and Redis, whose redis-server runs for the calling file (started
 * before its tests, with its SQLite files removed after them); `redisUrl()` names it, undefined
 * on a machine without redis-server (then `suite` is reported skipped on Redis).
 */
export function limitsStates(suite: string): { states: LimitsState[]; redisUrl: () => string | undefined } {
  let redis: RunningRedis | undefined;
  const hasRedis = redisAvailable(suite);
  const dir = mkdtempSync(join(tmpdir(), 'cdp-limits-'));
  beforeAll(async () => {
    if (hasRedis) redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const states: LimitsState[] = [
    { name: 'memory', state: () => ({ stateFile: ':memory:' }) },
    { name: 'SQLite', state: () => ({ stateFile: join(dir, `relay-${Math.random()}.db`) }) },
    ...(hasRedis ? [{ name: 'Redis', state: () => ({ redisUrl: redis!.url }) }] : []),
  ];
  return { states, redisUrl: () => redis?.url };
}
