/**
 * A relay with the default limits over real HTTP, through a trusted proxy's X-Forwarded-For, as a
 * relay behind a load balancer sees its visitors.
 */
import { afterAll, beforeAll } from 'vitest';
import { parseConfig } from '../../../src/relay/core/config.js';
import { type RunningRelay, startRelay } from '../../../src/relay/node.js';
import { startTestUpstream, type TestUpstream } from './upstream.js';

const KEY = 'limits-platform-key';
const ORIGIN = 'https://shop.example.com';

/**
 * Starts such a relay before the enclosing describe's tests and closes it after them; returns
 * `post(visitor, items, { ids, signal })`, which sends one batch of tracks from that visitor's address,
 * and `health()`, which asks its `/healthz` (no limit counts it). `site`: more of the site's settings
 * (e.g. `visitor_rate_limit`); `state`: the relay's state (default memory).
 */
export function limitsRelay(options: { site?: Record<string, unknown>; state?: () => { stateFile?: string; redisUrl?: string } } = {}): {
  post: (visitor: string, items?: number, options?: { ids?: string[]; signal?: AbortSignal }) => Promise<Response>;
  health: () => Promise<Response>;
} {
  let upstream: TestUpstream;
  let relay: RunningRelay;
  beforeAll(async () => {
    upstream = await startTestUpstream({ key: KEY });
    const config = parseConfig({
      CDP_API_KEY: KEY,
      CDP_BASE_URL: upstream.url,
      RELAY_SITES: JSON.stringify([{ key: 'pk_busy', origins: [ORIGIN], verify: 'open', ...options.site }]),
      RELAY_TRUST_PROXY: '127.0.0.1',
      // These visitors prove no person: the share of the outbox kept for proven visitors would answer
      // a crowd of them 503 `retry` once half of it waits, a limit of its own (unproven-capacity.test.ts).
      RELAY_OUTBOX_UNPROVEN_SHARE: '1',
      RELAY_LOG: 'off',
    });
    relay = await startRelay({ port: 0, config, ...options.state?.() });
  });
  afterAll(async () => {
    await relay?.close();
    await upstream?.close();
  });

  const health = () => fetch(`${relay.url}/healthz`);
  const post = (visitor: string, items = 10, { ids, signal }: { ids?: string[]; signal?: AbortSignal } = {}) =>
    fetch(`${relay.url}/collect`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain', 'x-forwarded-for': visitor },
      ...(signal ? { signal } : {}),
      body: JSON.stringify({
        key: 'pk_busy',
        batch: Array.from({ length: items }, (_, i) => ({
          id: ids?.[i] ?? crypto.randomUUID(),
          type: 'track',
          ts: new Date().toISOString(),
          activity_id: 'act:cm:viewed',
          person: { 'str::email': `${visitor}@example.com` },
        })),
      }),
    });
  return { post, health };
}

/** {@link limitsRelay}'s `post`, with the default limits. */
export const defaultLimitsRelay = (): ReturnType<typeof limitsRelay>['post'] => limitsRelay().post;
