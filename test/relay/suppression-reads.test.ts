// On Node, the requests that find the process's copy of the suppression list too old while one of
// them reads it wait for that read: one read in flight per process (core/last-value.ts `share`),
// not one per request, which on a busy relay would put a store round trip on every /collect that
// came during one. Counted on a real redis-server by the commands its read script runs.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/relay/core/config.js';
import { type RunningRelay, startRelay } from '../../src/relay/node.js';
import { type RunningRedis, redisAvailable, startRedis } from '../support/redis.js';
import { track } from './suite/target.js';

const ORIGIN = 'https://shop.example.com';
const withRedis = redisAvailable('suppression reads on Redis (test/relay/suppression-reads.test.ts)');
/** How old the copy may get here: long enough that every request of a burst comes within it. */
const REFRESH_MS = 2_000;

describe.runIf(withRedis)("a Node relay's reads of the suppression list on Redis", () => {
  let redis: RunningRedis;
  let relay: RunningRelay;
  let counter: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    counter = new Redis(redis.url);
    const config = parseConfig({
      CDP_API_KEY: 'suppression-reads-key',
      // Nothing is delivered here: the relay runs no deliverer.
      CDP_BASE_URL: 'http://127.0.0.1:9',
      RELAY_SITES: JSON.stringify([{ key: 'pk_reads', origins: [ORIGIN], verify: 'off' }]),
      RELAY_TRUST_PROXY: '127.0.0.1',
      RELAY_LOG: 'off',
    });
    relay = await startRelay({ port: 0, config, redisUrl: redis.url, deliver: false, suppressionRefreshMs: REFRESH_MS });
  });
  afterAll(async () => {
    await relay?.close();
    counter?.disconnect();
    await redis?.close();
  });

  /** Reads of the list so far: the one command of Redis that only the read's script runs from /collect. */
  const reads = async () => Number(/cmdstat_zremrangebyscore:calls=(\d+)/.exec(await counter.info('commandstats'))?.[1] ?? 0);
  const post = (visitor: string) =>
    fetch(`${relay.url}/collect`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain', 'x-forwarded-for': visitor },
      body: JSON.stringify({
        key: 'pk_reads',
        batch: [track('act:cm:viewed', { 'str::email': `${visitor}@example.com` })],
      }),
    });

  it('reads it once for a burst of 40 requests that find the copy too old, however many come while the read is under way', async () => {
    expect((await post('192.0.2.1')).status).toBe(200);
    // The copy is now too old for every request of the burst below.
    await new Promise((resolve) => setTimeout(resolve, REFRESH_MS + 100));
    // Connections opened first, so that the burst's requests reach the relay together.
    await Promise.all(Array.from({ length: 40 }, () => fetch(`${relay.url}/healthz`).then((response) => response.arrayBuffer())));
    const before = await reads();
    const statuses = await Promise.all(Array.from({ length: 40 }, (_, i) => post(`198.51.100.${i + 1}`).then((response) => response.status)));
    expect(statuses).toEqual(Array(40).fill(200));
    expect((await reads()) - before).toBe(1);
  }, 30_000);
});
