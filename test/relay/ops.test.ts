// Operating the relay on Node: exact Prometheus counts after a known sequence of requests, the
// metrics scope on the public port, and /readyz following the store (a real redis-server) and the
// platform (a real emulator) away and back.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { silentLogger } from '../../src/relay/core/logging.js';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';
import { createToken } from '../../src/relay/core/tokens.js';
import { redisAvailable, startRedis, type RunningRedis } from '../support/redis.js';
import { startUpstreamStack, UPSTREAM_KEY, type UpstreamStack } from './support/stack.js';

const ORIGIN = 'https://shop.example.com';
const SITE = {
  key: 'pk_ops_site',
  name: 'shop',
  origins: [ORIGIN],
  verify: 'open',
  activities: ['act:cm:signed-up'],
  visitor_rate_limit: { per_second: 0.001, burst: 3 },
};

/** `name{a="1",b="2"}` → value, labels sorted, for every sample of the scrape. */
function samples(text: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels = (match[2] ?? '')
      .split(/,(?=[a-z_]+=")/)
      .filter(Boolean)
      .sort()
      .join(',');
    found.set(labels ? `${match[1]}{${labels}}` : match[1]!, Number(match[3]));
  }
  return found;
}

const collect = (relay: RunningRelay, key: string, batch: unknown[]) =>
  fetch(`${relay.url}/collect`, { method: 'POST', headers: { origin: ORIGIN, 'content-type': 'text/plain' }, body: JSON.stringify({ key, batch }) });

const identify = (email: string) => ({ id: crypto.randomUUID(), type: 'identify', fields: { 'str::email': email } });

describe('metrics', () => {
  let stack: UpstreamStack;
  let relay: RunningRelay;
  let dir: string;
  let reader: string;
  let scraper: string;

  beforeAll(async () => {
    stack = await startUpstreamStack();
    dir = mkdtempSync(join(tmpdir(), 'cdp-edge-ops-'));
    const read = await createToken({ name: 'crm', scopes: ['read'] });
    const metrics = await createToken({ name: 'prometheus', scopes: ['metrics'] });
    reader = read.token;
    scraper = metrics.token;
    relay = await startRelay({
      port: 0,
      metricsPort: 0,
      logger: silentLogger,
      stateFile: join(dir, 'state.db'),
      env: {
        CDP_API_KEY: UPSTREAM_KEY,
        CDP_BASE_URL: stack.url,
        RELAY_SITES: JSON.stringify([SITE]),
        RELAY_TOKENS: JSON.stringify([read.entry, metrics.entry]),
      },
    });
  });
  afterAll(async () => {
    await relay?.close();
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('counts requests, items by result and reason, limits, upstream and proxy calls exactly', async () => {
    const people = [identify('ops-a@example.com'), identify('ops-b@example.com')];
    const malformed = { id: crypto.randomUUID(), type: 'identify', fields: 'not an object' };
    const track = { id: crypto.randomUUID(), type: 'track', activity_id: 'act:cm:signed-up', person: { 'str::email': 'ops-a@example.com' } };
    const refused = { id: crypto.randomUUID(), type: 'track', activity_id: 'act:cm:other', person: { 'str::email': 'ops-a@example.com' } };

    // 1: two people and a track accepted, one malformed item. 2: the same again (duplicates). 3: an activity the site does not allow.
    expect((await collect(relay, SITE.key, [...people, malformed, track])).status).toBe(200);
    expect((await collect(relay, SITE.key, [...people, malformed, track])).status).toBe(200);
    expect((await collect(relay, SITE.key, [refused])).status).toBe(200);
    // 4 and 5: past the visitor's burst of 3. 6: a key that names no site.
    expect((await collect(relay, SITE.key, [identify('ops-c@example.com')])).status).toBe(429);
    expect((await collect(relay, SITE.key, [identify('ops-c@example.com')])).status).toBe(429);
    expect((await collect(relay, 'pk_nobody', [identify('ops-c@example.com')])).status).toBe(401);
    // The proxy: one call with a read token, one without a token.
    const proxied = (headers: Record<string, string>) =>
      fetch(`${relay.url}/v1/person/get`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ limit: 1 }) });
    expect((await proxied({ authorization: `Bearer ${reader}` })).status).toBe(200);
    expect((await proxied({})).status).toBe(401);

    await relay.drained();
    const response = await fetch(`${relay.metricsUrl}/metrics`);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const metrics = samples(await response.text());
    const expected: Record<string, number> = {
      'cdp_edge_collect_requests_total{site="shop",status="200"}': 3,
      'cdp_edge_collect_requests_total{site="shop",status="429"}': 2,
      'cdp_edge_collect_requests_total{site="(unknown)",status="401"}': 1,
      'cdp_edge_items_total{result="accepted",site="shop"}': 3,
      'cdp_edge_items_total{result="duplicate",site="shop"}': 3,
      'cdp_edge_items_total{reason="invalid",result="rejected",site="shop"}': 2,
      'cdp_edge_items_total{reason="not_allowed",result="rejected",site="shop"}': 1,
      'cdp_edge_rate_limited_requests_total{site="shop"}': 2,
      'cdp_edge_upstream_requests_total{endpoint="person/merge",status="200"}': 1,
      'cdp_edge_upstream_requests_total{endpoint="activities/create",status="200"}': 1,
      'cdp_edge_upstream_requests_total{endpoint="person/get",status="200"}': 1,
      'cdp_edge_upstream_request_duration_seconds_count{endpoint="person/merge"}': 1,
      'cdp_edge_collect_request_duration_seconds_count{site="shop"}': 5,
      'cdp_edge_proxy_requests_total{endpoint="person/get",status="200",token="crm"}': 1,
      'cdp_edge_proxy_requests_total{endpoint="person/get",status="401",token="(none)"}': 1,
      // the SQLite file remembers the three accepted ids; all delivered, nothing waits
      cdp_edge_store_remembered_ids: 3,
      cdp_edge_outbox_pending: 0,
      cdp_edge_outbox_dead_letters: 0,
      'cdp_edge_delivered_entries_total{endpoint="person/merge"}': 2,
      'cdp_edge_delivered_entries_total{endpoint="activities/create"}': 1,
      // one observation a delivered entry, all within the last bucket's 300 s
      cdp_edge_delivery_latency_seconds_count: 3,
      'cdp_edge_delivery_latency_seconds_bucket{le="+Inf"}': 3,
      'cdp_edge_delivery_latency_seconds_bucket{le="300"}': 3,
    };
    for (const [sample, value] of Object.entries(expected)) expect([sample, metrics.get(sample)]).toEqual([sample, value]);
    // Nothing counted under a key or a token: labels name sites and token holders only.
    const text = [...metrics.keys()].join('\n');
    for (const secret of [SITE.key, 'pk_nobody', reader, scraper, UPSTREAM_KEY]) expect(text).not.toContain(secret);
    expect(metrics.get('cdp_edge_process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(metrics.get('cdp_edge_delivery_latency_seconds_sum')).toBeGreaterThan(0);
  });

  it('serves /metrics on the public port only to a token with the metrics scope', async () => {
    const scrape = (headers: Record<string, string>) => fetch(`${relay.url}/metrics`, { headers });
    expect((await scrape({})).status).toBe(401);
    const wrongScope = await scrape({ authorization: `Bearer ${reader}` });
    expect(wrongScope.status).toBe(403);
    expect((await wrongScope.json()).error.code).toBe('forbidden');
    const allowed = await scrape({ authorization: `Bearer ${scraper}` });
    expect(allowed.status).toBe(200);
    expect(await allowed.text()).toContain('cdp_edge_collect_requests_total{site="shop",status="200"} 3');
  });

  it('shows the rejected items with their reasons on /status.json and the page', async () => {
    const snapshot = await (await fetch(`${relay.metricsUrl}/status.json`)).json();
    expect(snapshot.rejected.map((item: { reason: string }) => item.reason)).toEqual(['not_allowed', 'invalid', 'invalid']);
    expect(snapshot.buckets).toHaveLength(90);
    expect(snapshot.totals).toMatchObject({ requests: 6 });
    const page = await fetch(`${relay.metricsUrl}/status`);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain('<meta http-equiv="refresh"');
    expect(html).toContain('act:cm:other');
  });
});

const withRedis = redisAvailable('readiness against a real redis-server (test/relay/ops.test.ts)');

describe.runIf(withRedis)('/readyz', () => {
  let redis: RunningRedis;
  let emulator: RunningEmulator;
  let relay: RunningRelay;

  beforeAll(async () => {
    redis = await startRedis();
    emulator = await startEmulator({ port: 0, key: UPSTREAM_KEY });
    relay = await startRelay({
      port: 0,
      logger: silentLogger,
      redisUrl: redis.url,
      // every check asks the platform, so a test need not wait out a minute of silence
      platformFreshMs: 0,
      // the reason is told on the private metrics port only; the public one says ready or not
      metricsPort: 0,
      env: { CDP_API_KEY: UPSTREAM_KEY, CDP_BASE_URL: emulator.url, RELAY_SITES: JSON.stringify([SITE]) },
    });
  });
  afterAll(async () => {
    await relay?.close();
    await emulator?.close();
    await redis?.stop();
  });

  const ready = async () => {
    const response = await fetch(`${relay.metricsUrl}/readyz`);
    const body = (await response.json()) as { ready: boolean; reason?: string };
    // the public port agrees, without the reason
    const open = await fetch(`${relay.url}/readyz`);
    expect({ status: open.status, body: await open.json() }).toEqual({ status: open.status, body: { ready: open.status === 200 } });
    return { status: response.status, body };
  };
  /** Polls /readyz until it answers `status` (the platform probe's answer is kept two seconds). */
  const until = async (status: number) => {
    const deadline = Date.now() + 15_000;
    let last = await ready();
    while (last.status !== status && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      last = await ready();
    }
    return last;
  };

  it('is ready, then 503 naming the store while Redis is down, and ready again once it is back', async () => {
    expect(await ready()).toEqual({ status: 200, body: { ready: true } });
    expect((await fetch(`${relay.url}/healthz`)).status).toBe(200);
    await redis.stop();
    const down = await until(503);
    expect(down.status).toBe(503);
    expect(down.body.reason).toMatch(/^store: /);
    // liveness does not depend on the store
    expect((await fetch(`${relay.url}/healthz`)).status).toBe(200);
    await redis.restart();
    expect((await until(200)).body).toEqual({ ready: true });
  });

  it('turns 503 naming the platform when it goes away, and ready again when it returns', async () => {
    const port = Number(new URL(emulator.url).port);
    await emulator.close();
    const down = await until(503);
    expect(down.status).toBe(503);
    expect(down.body.reason).toMatch(/^platform: /);
    emulator = await startEmulator({ port, key: UPSTREAM_KEY });
    expect((await until(200)).body).toEqual({ ready: true });
  });
});
