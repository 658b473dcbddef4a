/**
 * The proxy on Node over real HTTP on loopback: the shared suite, plus what only a raw socket
 * can show (request targets no fetch client would send, a body cut short by the 413).
 */
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelayHandlers } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import { createNodeFront } from '../../src/relay/node/front.js';
import type { AuditEntry } from '../../src/relay/core/observe.js';
import { createProxyRoutes } from '../../src/relay/proxy/index.js';
import { createUndiciTransport } from '../../src/relay/deliver/undici.js';
import type { Transport } from '../../src/relay/deliver/transport.js';
import { hashToken } from '../../src/relay/core/tokens.js';
import { listen } from './proxy-http.js';
import { createTestUpstream } from './proxy-upstream.js';
import { API_KEY, proxySuite, type MakeTarget } from './proxy-suite.js';

const nodeTarget =
  (transport?: Transport): MakeTarget =>
  async ({ tokens, apiKey, upstream, logger, now, sleep }) => {
    const platform = await listen((request) => upstream.fetch(request));
    const proxy = createProxyRoutes({
      tokens,
      upstream: { baseUrl: platform.url, apiKey },
      logger,
      now,
      sleep,
      ...(transport ? { transport } : {}),
    });
    const relay = await listen(proxy.fetch);
    return {
      request: (path, init) => fetch(`${relay.url}${path}`, init),
      close: async () => {
        await relay.close();
        await platform.close();
      },
    };
  };

proxySuite('Node, real HTTP, global fetch upstream', nodeTarget());
proxySuite('Node, real HTTP, undici pooled upstream (createUndiciTransport)', nodeTarget(createUndiciTransport()));

/** The whole relay behind the Node entry's own front, which answers `/v1` calls straight from node:http. */
const nodeFrontTarget: MakeTarget = async ({ tokens, apiKey, upstream, logger, now, sleep }) => {
  const platform = await listen((request) => upstream.fetch(request));
  const config = parseConfig({ CDP_API_KEY: apiKey, CDP_BASE_URL: platform.url, RELAY_TOKENS: JSON.stringify(tokens), RELAY_LOG: 'off' });
  const handlers = createRelayHandlers(config, {
    transport: createUndiciTransport(),
    // The suite reads the proxy's audit lines.
    logger: (line) => {
      if (line.kind === 'proxy') logger(line as unknown as AuditEntry);
    },
    clock: { now, sleep },
  });
  const server = createServer(createNodeFront(handlers, config));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    request: (path, init) => fetch(`http://127.0.0.1:${port}${path}`, init),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await platform.close();
    },
  };
};
proxySuite("Node entry's front (node:http, no Request/Response), undici pooled upstream", nodeFrontTarget);

describe.each([
  ['the Node entry', nodeFrontTarget],
  ['@hono/node-server', nodeTarget(createUndiciTransport())],
])('a caller that hangs up mid-answer (%s)', (_name, makeTarget) => {
  it("cancels the platform's streamed answer, so its connection is not held by a body nobody reads", async () => {
    const upstream = createTestUpstream();
    const token = 'rt_hangup_token_0123456789abcdefghijklmnop';
    let cancelled!: () => void;
    const cancel = new Promise<void>((resolve) => (cancelled = resolve));
    upstream.on('/v1/person/get', () => {
      const chunk = new TextEncoder().encode(`{"contacts":[${'{"id":"00a1b2c3d4e5f60718293a4b"},'.repeat(3000)}`);
      // An answer that never ends on its own: only the relay cancelling it stops it.
      let stopped = false;
      const stream = new ReadableStream<Uint8Array>({
        pull: async (controller) => {
          await new Promise((resolve) => setTimeout(resolve, 5));
          if (!stopped) controller.enqueue(chunk);
        },
        cancel: () => {
          stopped = true;
          cancelled();
        },
      });
      return new Response(stream, { headers: { 'content-type': 'application/json' } });
    });
    const target = await makeTarget({
      tokens: [{ name: 'hangup', sha256: await hashToken(token), scopes: ['admin'] }],
      apiKey: API_KEY,
      upstream,
      logger: () => {},
      now: Date.now,
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    });
    try {
      const controller = new AbortController();
      const response = await target.request('/v1/person/get', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{}',
        signal: controller.signal,
      });
      expect(response.status).toBe(200);
      const reader = response.body!.getReader();
      await reader.read();
      controller.abort();
      const outcome = await Promise.race([cancel.then(() => 'cancelled'), new Promise((resolve) => setTimeout(() => resolve('still streaming'), 3000))]);
      expect(outcome).toBe('cancelled');
    } finally {
      await target.close();
    }
  });
});

/** A raw HTTP/1.1 exchange: the request target goes on the wire exactly as written. */
function raw(url: string, method: string, target: string, headers: Record<string, string | number>, body?: string, sendAll = true) {
  const { hostname, port } = new URL(url);
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest({ hostname, port, method, path: target, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    if (sendAll) req.end();
  });
}

describe('relay proxy on Node: raw request targets and early refusals', () => {
  const upstream = createTestUpstream();
  const token = 'rt_raw_test_token_ffffffffffffffffffffffffffff';
  let platform: Awaited<ReturnType<typeof listen>>;
  let relay: Awaited<ReturnType<typeof listen>>;

  beforeAll(async () => {
    platform = await listen((request) => upstream.fetch(request));
    const proxy = createProxyRoutes({
      tokens: [{ name: 'raw', sha256: await hashToken(token), scopes: ['admin'] }],
      upstream: { baseUrl: platform.url, apiKey: API_KEY },
      logger: () => {},
    });
    relay = await listen(proxy.fetch);
  });
  afterAll(async () => {
    await relay.close();
    await platform.close();
  });

  const targets = [
    '/v1/person/get/../../x',
    '/v1/person/get/%2e%2e/%2e%2e/x',
    '/v1/person%2Fget',
    '/v1/person%2fget',
    '/v1//person/get',
    '//v1/person/get',
    '/v1/./person/get/.',
    '/v1/person/get%00',
    '/v1/person/get;x=1',
    '/v1/person/%67et',
  ];
  for (const target of targets) {
    it(`${target} on the wire never reaches a route or the platform`, async () => {
      upstream.reset();
      const response = await raw(relay.url, 'POST', target, { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, '{}');
      // 404 from the proxy, or 400 from the HTTP layer for a target it will not parse.
      expect([400, 404], `${target}: ${response.body}`).toContain(response.status);
      expect(upstream.received).toHaveLength(0);
    });
  }

  it('takes an absolute-form target as its path only: the call goes to the configured platform, not the named host', async () => {
    upstream.reset();
    const response = await raw(
      relay.url,
      'POST',
      'http://evil.example/v1/person/get',
      { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      '{}',
    );
    expect(response.status).toBe(200);
    expect(upstream.received.map((r) => [r.path, r.headers['host']])).toEqual([['/v1/person/get', new URL(platform.url).host]]);
  });

  it('answers 502 upstream_unreachable when the platform cannot be reached', async () => {
    const closed = await listen(() => new Response('never'));
    await closed.close();
    const proxy = createProxyRoutes({
      tokens: [{ name: 'raw', sha256: await hashToken(token), scopes: ['admin'] }],
      upstream: { baseUrl: closed.url, apiKey: API_KEY },
      logger: () => {},
    });
    const response = await proxy.request('/v1/tags/get', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: '{}' });
    expect(response.status).toBe(502);
    expect(await response.json()).toMatchObject({ error: { code: 'upstream_unreachable' } });
  });

  it('answers 413 from Content-Length alone, before the body has been sent', async () => {
    upstream.reset();
    const response = await raw(
      relay.url,
      'POST',
      '/v1/person/merge',
      { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': 3 * 1024 * 1024 },
      '{"people":[',
      false,
    );
    expect(response.status).toBe(413);
    expect(JSON.parse(response.body)).toMatchObject({ error: { code: 'payload_too_large' } });
    expect(upstream.received).toHaveLength(0);
  });

  it('answers 413 for a chunked-encoding body once it passes 2 MB, without waiting for the rest', async () => {
    upstream.reset();
    const { hostname, port } = new URL(relay.url);
    const result = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        { hostname, port, method: 'POST', path: '/v1/person/merge', headers: { authorization: `Bearer ${token}`, 'transfer-encoding': 'chunked' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
          req.destroy();
        },
      );
      req.on('error', (error) => (req.destroyed ? undefined : reject(error)));
      // 3 MB in 64 kB writes, and the request is never ended: only an early answer resolves.
      const piece = 'x'.repeat(64 * 1024);
      for (let i = 0; i < 48; i++) req.write(piece);
    });
    expect(result).toBe(413);
    expect(upstream.received).toHaveLength(0);
  });
});

describe("relay proxy: one 429 window shared with the relay's other forwarders", () => {
  it('holds calls while a shared backoff is in force, and pushes it out on a 429 for everyone holding it', async () => {
    const upstream = createTestUpstream();
    const token = 'rt_backoff_token_0000000000000000000000000000';
    const backoff = { until: 0 };
    let clock = 1_000_000;
    const make = async () =>
      createProxyRoutes({
        tokens: [{ name: 'b', sha256: await hashToken(token), scopes: ['admin'] }],
        upstream: { baseUrl: 'https://platform.test', apiKey: API_KEY },
        fetch: async (input, init) => upstream.fetch(new Request(input, init)),
        logger: () => {},
        now: () => clock,
        backoff,
      });
    const [a, b] = [await make(), await make()];
    const call = (proxy: typeof a) => proxy.request('/v1/tags/get', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: '{}' });

    // Another forwarder (e.g. /collect) met a 429 that asked for 4 seconds.
    backoff.until = clock + 4_000;
    const held = await call(a);
    expect(held.status).toBe(429);
    expect(held.headers.get('retry-after')).toBe('4');
    expect(upstream.received).toHaveLength(0);

    clock += 4_000;
    upstream.on('/v1/tags/get', (_request, count) =>
      count === 0 ? Response.json({ error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 9 } }, { status: 429 }) : Response.json([]),
    );
    expect((await call(a)).status).toBe(429);
    expect(backoff.until).toBe(clock + 9_000);
    const heldToo = await call(b);
    expect(heldToo.status).toBe(429);
    expect(heldToo.headers.get('retry-after')).toBe('9');
    expect(upstream.received).toHaveLength(1);
  });
});

describe('relay proxy: a platform that never answers', () => {
  it('answers 504 upstream_timeout once timeoutMs has passed without response headers', async () => {
    const token = 'rt_timeout_token_000000000000000000000000000';
    const proxy = createProxyRoutes({
      tokens: [{ name: 't', sha256: await hashToken(token), scopes: ['admin'] }],
      upstream: { baseUrl: 'https://platform.test', apiKey: API_KEY },
      fetch: () => new Promise<Response>(() => {}),
      logger: () => {},
      timeoutMs: 50,
    });
    const response = await proxy.request('/v1/tags/get', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: '{}' });
    expect(response.status).toBe(504);
    expect(await response.json()).toMatchObject({ error: { code: 'upstream_timeout', message: expect.stringContaining('tags/get') } });
  });
});
