// The runtime-neutral app in process (Hono's app.request, an injected platform fetch):
// log lines without personal data or the key, and exactly-once under concurrent sends.
import { describe, expect, it } from 'vitest';
import { createRelay, createRelayHandlers, type RelayDeps } from '../../src/relay/app.js';
import { createMemoryOutbox } from '../../src/relay/state/memory-outbox.js';
import { parseConfig } from '../../src/relay/core/config.js';
import type { LogLine } from '../../src/relay/core/logging.js';
import { createMemoryStore } from '../../src/relay/state/memory.js';
import { createMemoryLimiter } from '../../src/relay/core/limits.js';

/** What the tests read of a platform call's body and of the relay's answer. */
interface UpstreamBody {
  people?: unknown[];
  activities: { created?: string }[];
}
interface Answer {
  results: { status: string }[];
  error: { code: string };
}

const KEY = 'sk_app_test_platform_key';
const ORIGIN = 'https://shop.example.com';
const config = parseConfig({
  CDP_API_KEY: KEY,
  CDP_BASE_URL: 'https://upstream.test',
  RELAY_SITES: JSON.stringify([{ key: 'pk_app', name: 'shop', origins: [ORIGIN], verify: 'open' }]),
});

function platform(delayMs = 0) {
  const calls: { path: string; body: UpstreamBody; headers: Headers }[] = [];
  const fetchImpl = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const body = await request.json();
    calls.push({ path: new URL(request.url).pathname, body, headers: request.headers });
    if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
    return Response.json(
      body.people
        ? { people: body.people.map(() => ({ person_id: '00'.repeat(12), status: 'created' })) }
        : { activities: body.activities.map(() => ({ status: 'queued' })) },
    );
  }) as typeof fetch;
  return { calls, fetch: fetchImpl };
}

/** The app and its in-process deliverer: `drained()` once what it accepted reached the platform. */
function relay(deps: RelayDeps, relayConfig = config) {
  const handlers = createRelayHandlers(relayConfig, deps);
  return { app: handlers.app, drained: () => handlers.drained(), close: () => handlers.close() };
}

const post = (app: ReturnType<typeof createRelay>, batch: unknown[]) =>
  app.request('/collect', {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', cookie: 'sid=1' },
    body: JSON.stringify({ key: 'pk_app', batch }),
  });

describe('the relay app', () => {
  it('logs one JSON line per request with counts and statuses, and nothing personal, and never the key', async () => {
    const lines: LogLine[] = [];
    const upstream = platform();
    const { app, drained, close } = relay({
      fetch: upstream.fetch,
      store: createMemoryStore(),
      logger: (line) => lines.push(line),
      clientInfo: () => ({ ip: '198.51.100.77' }),
    });
    const batch = [
      { id: 'i-1', type: 'identify', fields: { 'str::email': 'secret.person@example.com', 'str::first': 'Zelda' }, user_hash: 'ab'.repeat(32) },
      { id: 't-1', type: 'track', activity_id: 'act:cm:signed-up', person: { 'str::email': 'secret.person@example.com' } },
      { id: 't-2', type: 'bogus' },
    ];
    expect((await post(app, batch)).status).toBe(200);
    expect((await app.request('/collect', { method: 'POST', headers: { origin: ORIGIN }, body: '{"key":"pk_unknown","batch":[]}' })).status).toBe(401);
    await drained();
    await close();
    expect(upstream.calls.map((call) => call.path)).toEqual(['/v1/person/merge', '/v1/activities/create']);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      kind: 'collect',
      method: 'POST',
      path: '/collect',
      status: 200,
      site: 'shop',
      items: 3,
      results: { accepted: 2, rejected: 1 },
    });
    // Accepted once durable: the answer waited for no platform call, and its line names none.
    expect(lines[0]).not.toHaveProperty('upstream');
    expect(lines[0]!.ms).toEqual(expect.any(Number));
    expect(lines[1]).toMatchObject({ status: 401, error: 'unknown_site_key' });
    const text = JSON.stringify(lines);
    for (const secret of [KEY, 'secret.person', 'Zelda', '198.51.100.77', 'ab'.repeat(32), 'i-1', 't-1']) expect(text).not.toContain(secret);
  });

  it('logs one short line for every other answer, with unknown paths as "*"', async () => {
    const lines: LogLine[] = [];
    const app = createRelay(config, { fetch: platform().fetch, store: createMemoryStore(), logger: (line) => lines.push(line) });
    await app.request('/collect', { method: 'OPTIONS', headers: { origin: ORIGIN } });
    await app.request('/healthz');
    await app.request('/users/ann@example.com');
    expect(lines.map((line) => [line['kind'], line.method, line.path, line.status])).toEqual([
      ['http', 'OPTIONS', '/collect', 204],
      ['http', 'GET', '/healthz', 200],
      ['http', 'GET', '*', 404],
    ]);
  });

  it('serves the browser endpoint at RELAY_COLLECT_PATH instead of /collect when set', async () => {
    const custom = parseConfig({
      CDP_API_KEY: KEY,
      CDP_BASE_URL: 'https://upstream.test',
      RELAY_COLLECT_PATH: '/e',
      RELAY_SITES: JSON.stringify([{ key: 'pk_app', origins: [ORIGIN], verify: 'open' }]),
    });
    const app = createRelay(custom, { fetch: platform().fetch, store: createMemoryStore(), logger: () => {} });
    const batch = [{ id: 'c-1', type: 'track', activity_id: 'act:cm:signed-up', person: { 'str::email': 'path@example.com' } }];
    const response = await app.request('/e', { method: 'POST', headers: { origin: ORIGIN }, body: JSON.stringify({ key: 'pk_app', batch }) });
    expect(((await response.json()) as Answer).results[0]?.status).toBe('accepted');
    expect((await app.request('/collect', { method: 'POST', headers: { origin: ORIGIN }, body: '{}' })).status).toBe(404);
  });

  it("takes a limiter of the user's own with `limit` alone, and a request its site cap refuses spends nothing of the visitor's allowance", async () => {
    const capped = parseConfig({
      CDP_API_KEY: KEY,
      CDP_BASE_URL: 'https://upstream.test',
      RELAY_SITES: JSON.stringify([
        { key: 'pk_app', origins: [ORIGIN], verify: 'open', rate_limit: { per_second: 1, burst: 1 }, visitor_rate_limit: { per_second: 1, burst: 2 } },
      ]),
    });
    const buckets = createMemoryLimiter();
    const taken: string[] = [];
    const own = {
      limit: (...args: Parameters<typeof buckets.limit>) => {
        taken.push(args[0]);
        return buckets.limit(...args);
      },
    };
    const app = createRelay(capped, {
      fetch: platform().fetch,
      store: createMemoryStore(),
      logger: () => {},
      limiter: own,
      clientInfo: () => ({ ip: '198.51.100.9' }),
    });
    const track = (id: string) => ({ id, type: 'track', activity_id: 'act:cm:signed-up', person: { 'str::email': 'own@example.com' } });
    expect(((await (await post(app, [track('own-1')])).json()) as Answer).results[0]?.status).toBe('accepted');
    // The site's one token is spent: refused 429, and the visitor's token taken for it is given back.
    const refused = await post(app, [track('own-2')]);
    expect(refused.status).toBe(429);
    expect(taken.some((key) => key.startsWith('site:'))).toBe(true);
    const visitor = taken.find((key) => key.startsWith('visitor:'))!;
    // Of the visitor's burst of 2, one request took one: one left, and a look (charge 0) finds it.
    expect((await buckets.limit(visitor, { perSecond: 1, burst: 2 }, Date.now(), 0)).ok).toBe(true);
  });

  it('forwards an item sent twice at the same moment only once (the second is a duplicate)', async () => {
    const upstream = platform(100);
    const { app, drained, close } = relay({ fetch: upstream.fetch, store: createMemoryStore(), logger: () => {} });
    const item = { id: 'same-1', type: 'track', activity_id: 'act:cm:signed-up', person: { 'str::email': 'twice@example.com' } };
    const [first, second] = await Promise.all([post(app, [item]), post(app, [item])]);
    const statuses = [((await first.json()) as Answer).results[0]?.status, ((await second.json()) as Answer).results[0]?.status].sort();
    expect(statuses).toEqual(['accepted', 'duplicate']);
    const later = (await (await post(app, [item])).json()) as Answer;
    expect(later.results[0]?.status).toBe('duplicate');
    await drained();
    await close();
    expect(upstream.calls).toHaveLength(1);
    expect(upstream.calls[0]!.body.activities).toHaveLength(1);
    // Browser cookies never travel upstream.
    expect(upstream.calls[0]!.headers.get('cookie')).toBeNull();
  });
});

describe('the relay app when its state store fails', () => {
  const item = () => ({ id: crypto.randomUUID(), type: 'track', activity_id: 'act:cm:signed-up', person: { 'str::email': 'state@example.com' } });

  it('answers 503 with Retry-After when the outbox cannot take the items, so the browser keeps every item', async () => {
    const outbox = createMemoryOutbox();
    outbox.accept = async () => {
      throw new Error('state unreachable');
    };
    const upstream = platform();
    const lines: LogLine[] = [];
    const { app, close } = relay({ fetch: upstream.fetch, store: createMemoryStore(), outbox, logger: (line) => lines.push(line) });
    const response = await post(app, [item()]);
    await close();
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('5');
    expect(((await response.json()) as Answer).error.code).toBe('relay_unavailable');
    expect(upstream.calls).toHaveLength(0);
    expect(lines[0]).toMatchObject({ status: 503, error: 'relay_unavailable', warning: 'Error' });
    // The unexpected cause is logged whole: its message and where it came from.
    expect(lines[0]!['cause']).toMatchObject({ name: 'Error', message: 'state unreachable', stack: expect.stringContaining('app.test.ts') });
  });

  it('tells browsers to wait as long as the outage has lasted (5 s to 5 min), and 5 s again once a batch went through', async () => {
    const outbox = createMemoryOutbox();
    const accept = outbox.accept.bind(outbox);
    let down = true;
    outbox.accept = async (...args) => {
      if (down) throw new Error('state unreachable');
      return accept(...args);
    };
    let at = Date.parse('2026-11-29T10:00:00Z');
    const clock = { now: () => at, sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)) };
    const { app, close } = relay({ fetch: platform().fetch, store: createMemoryStore(), outbox, clock, logger: () => {} });
    const retryAfterAt = async (seconds: number) => {
      at += seconds * 1000;
      const response = await post(app, [item()]);
      await response.arrayBuffer();
      return [response.status, response.headers.get('retry-after')];
    };
    // Every browser retries when told: told 5, then 20 s into the outage 20, then at most 300.
    expect(await retryAfterAt(0)).toEqual([503, '5']);
    expect(await retryAfterAt(3)).toEqual([503, '5']);
    // A batch refused for itself (400) says nothing of the outage: it goes on.
    const unreadable = await app.request('/collect', { method: 'POST', headers: { origin: ORIGIN, 'content-type': 'text/plain' }, body: '{not json' });
    expect(unreadable.status).toBe(400);
    expect(await retryAfterAt(17)).toEqual([503, '20']);
    expect(await retryAfterAt(80)).toEqual([503, '100']);
    expect(await retryAfterAt(1_000)).toEqual([503, '300']);
    down = false;
    expect(await retryAfterAt(1)).toEqual([200, null]);
    down = true;
    expect(await retryAfterAt(600)).toEqual([503, '5']);
    await close();
  });

  it('answers accepted as soon as the outbox holds the item, without waiting for a platform that never answers', async () => {
    const hanging = (() => new Promise<Response>(() => {})) as typeof fetch;
    const { app, close } = relay({ fetch: hanging, store: createMemoryStore(), logger: () => {} });
    const started = Date.now();
    const response = await post(app, [item()]);
    expect(response.status).toBe(200);
    expect(((await response.json()) as Answer).results[0]?.status).toBe('accepted');
    expect(Date.now() - started).toBeLessThan(1_000);
    void close();
  });
});

describe('one 429 window for the whole relay', () => {
  it('holds /collect back after the proxy saw the platform ask to slow down', async () => {
    let calls = 0;
    const fetchImpl = (async () => {
      calls++;
      return Response.json({ error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 60 } }, { status: 429 });
    }) as typeof fetch;
    const { hashToken } = await import('../../src/relay/core/tokens.js');
    const token = 'rt_app_test_token_0123456789abcdefghij';
    const withTokens = parseConfig({
      CDP_API_KEY: KEY,
      CDP_BASE_URL: 'https://upstream-429.test',
      RELAY_SITES: JSON.stringify([{ key: 'pk_app', origins: [ORIGIN], verify: 'open' }]),
      RELAY_TOKENS: JSON.stringify([{ name: 'crm', sha256: await hashToken(token), scopes: ['read'] }]),
    });
    const { app, close } = relay({ fetch: fetchImpl, store: createMemoryStore(), logger: () => {}, backoff: { until: 0 } }, withTokens);
    const proxied = await app.request('/v1/tags/get', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(proxied.status).toBe(429);
    const before = calls;
    const response = await post(app, [{ id: 'held-1', type: 'track', activity_id: 'act:cm:signed-up', person: { 'str::email': 'held@example.com' } }]);
    // Accepted (it is durable); the deliverer waits out the platform's window before calling.
    expect(((await response.json()) as Answer).results[0]?.status).toBe('accepted');
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(calls).toBe(before);
    await close();
  });
});

describe('event times', () => {
  it("corrects ts by the browser clock's error (from sent_at) when it is off by minutes, and keeps it exact otherwise", async () => {
    const T = Date.UTC(2026, 10, 23, 12);
    const upstream = platform();
    const { app, drained, close } = relay({
      fetch: upstream.fetch,
      store: createMemoryStore(),
      logger: () => {},
      clock: { now: () => T, sleep: async () => {} },
    });
    const send = (sentAt: number, ts: number, id: string) =>
      app.request('/collect', {
        method: 'POST',
        headers: { origin: ORIGIN },
        body: JSON.stringify({
          key: 'pk_app',
          sent_at: new Date(sentAt).toISOString(),
          batch: [{ id, type: 'track', ts: new Date(ts).toISOString(), activity_id: 'act:cm:signed-up', person: { 'str::email': 'clock@example.com' } }],
        }),
      });
    await send(T - 3600_000, T - 3600_000 - 10_000, 'skewed'); // the browser's clock is an hour slow
    await send(T - 30_000, T - 40_000, 'close'); // 30 s off: latency or a small drift, left alone
    await drained();
    await close();
    // One call or two (a track per lease, which may be in flight together): the times in any order.
    const created = upstream.calls.flatMap((call) => call.body.activities.map((activity) => activity.created));
    expect(created.sort()).toEqual([new Date(T - 40_000).toISOString(), new Date(T - 10_000).toISOString()]);
  });
});
