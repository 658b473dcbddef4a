/**
 * The relay's one upstream caller over real HTTP on loopback, on its transports: node:http's
 * pool (the Node entry's), undici's and a standard fetch (the Worker's). Answers whole or streamed,
 * redirects never followed, the 429 read once into the shared hold, a hung platform's call
 * aborted with its socket freed, and one metrics call per upstream call.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENDPOINTS } from '../../src/api/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { RelayHttpError } from '../../src/relay/core/errors.js';
import { createProxyRoutes } from '../../src/relay/proxy/index.js';
import { hashToken } from '../../src/relay/core/tokens.js';
import { createUpstream } from '../../src/relay/deliver/caller.js';
import { callOnce } from '../../src/relay/deliver/send.js';
import type { UpstreamCall } from '../../src/relay/core/observe.js';
import { fetchTransport, readText, type Transport, UpstreamTimeout } from '../../src/relay/deliver/transport.js';
import { createNodeHttpTransport } from '../../src/relay/deliver/node-http.js';
import { createUndiciTransport } from '../../src/relay/deliver/undici.js';

/** A platform stand-in whose answer is chosen by the x-api-key header; it counts open sockets. */
async function platform() {
  const hung: Socket[] = [];
  let release: () => void = () => {};
  const big = 'x'.repeat(200 * 1024);
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const mode = request.headers['x-api-key'];
      const echo = Buffer.concat(chunks).toString();
      if (mode === 'hang') return void hung.push(request.socket); // never answers
      if (mode === 'redirect') return void response.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
      if (mode === 'slow-429') return void response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' }).end('{"oops":1}');
      if (mode === '429') {
        response.writeHead(429, { 'content-type': 'application/json' });
        return void response.end(JSON.stringify({ error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 9 } }));
      }
      if (mode === 'chunked') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.write('{"a":');
        return void response.end('1}');
      }
      if (mode === 'large') {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.write(big);
        release = () => response.end('END');
        return;
      }
      const small = JSON.stringify({ echo, path: request.url });
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(small) }).end(small);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hung,
    big,
    release: () => release(),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const until = async (check: () => boolean, ms = 2_000) => {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 10));
  return check();
};

const transports: [string, () => Transport & { close?: () => Promise<void> }][] = [
  ['undici pool', () => createUndiciTransport({ connections: 1 })],
  ['node:http pool', () => createNodeHttpTransport({ connections: 1 })],
  ['standard fetch', () => fetchTransport(globalThis.fetch.bind(globalThis))],
];

describe.each(transports)('upstream caller on the %s transport', (_, makeTransport) => {
  let server: Awaited<ReturnType<typeof platform>>;
  const transport = makeTransport();
  const calls: UpstreamCall[] = [];
  let clock = 1_000_000;
  const caller = (apiKey: string, timeoutMs = 2_000) =>
    createUpstream({ baseUrl: server.url, apiKey, transport, timeoutMs, backoff: { until: 0 }, now: () => clock, onCall: (call) => calls.push(call) });

  beforeAll(async () => {
    server = await platform();
  });
  afterAll(async () => {
    await transport.close?.();
    await server.close();
  });

  it('sends the body once serialised, with the key, to the endpoint path, and hands a small answer over whole', async () => {
    const answer = await caller('k1').call(ENDPOINTS['person/get'], '{"n":1}');
    expect(answer.status).toBe(200);
    expect(answer.body).toBeInstanceOf(Uint8Array);
    expect(JSON.parse(await readText(answer))).toEqual({ echo: '{"n":1}', path: '/v1/person/get' });
    expect(calls.at(-1)).toMatchObject({ endpoint: 'person/get', status: 200 });
    expect(calls.at(-1)!.ms).toBeGreaterThanOrEqual(0);
  });

  it('reads an unsized small answer to its end', async () => {
    expect(JSON.parse(await readText(await caller('chunked').call(ENDPOINTS['tags/get'], '{}')))).toEqual({ a: 1 });
  });

  it('streams a large answer: its first 200 kB arrive before the platform has finished', async () => {
    const answer = await caller('large').call(ENDPOINTS['tags/get'], '{}');
    expect(answer.body).toBeInstanceOf(ReadableStream);
    const reader = (answer.body as ReadableStream<Uint8Array>).getReader();
    let received = 0;
    while (received < server.big.length) {
      const { done, value } = await reader.read();
      if (done) break;
      received += value.byteLength;
    }
    expect(received).toBe(server.big.length);
    server.release();
    let tail = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      tail += new TextDecoder().decode(value);
    }
    expect(tail).toBe('END');
  });

  it('reads try-in-seconds from a 429 once and holds every caller sharing the backoff', async () => {
    const upstream = caller('429');
    const answer = await upstream.call(ENDPOINTS['person/merge'], '{}');
    expect(answer).toMatchObject({ status: 429, holdSeconds: 9, retryAfter: '9' });
    expect(JSON.parse(await readText(answer))).toMatchObject({ error: { 'try-in-seconds': 9 } });
    expect(upstream.holdMs()).toBe(9_000);
    expect(upstream.backoff.until).toBe(clock + 9_000);
    clock += 4_000;
    expect(upstream.holdMs()).toBe(5_000);
  });

  it('falls back to Retry-After when a 429 has no try-in-seconds', async () => {
    const answer = await caller('slow-429').call(ENDPOINTS['person/merge'], '{}');
    expect(answer).toMatchObject({ status: 429, holdSeconds: 7, retryAfter: '7' });
  });

  it('never follows a redirect', async () => {
    expect((await caller('redirect').call(ENDPOINTS['tags/get'], '{}')).status).toBe(302);
  });

  it('aborts a call the platform never answers: 504 upstream_timeout, the socket closed, the pool free for the next call', async () => {
    const before = calls.length;
    const error = await caller('hang', 150)
      .call(ENDPOINTS['tags/get'], '{}')
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RelayHttpError);
    expect(error).toMatchObject({ status: 504, code: 'upstream_timeout' });
    expect(calls.slice(before)).toEqual([expect.objectContaining({ endpoint: 'tags/get', status: 0 })]);
    // The platform sees the connection go: nothing is left waiting on the hung answer.
    expect(server.hung).toHaveLength(1);
    expect(await until(() => server.hung.every((socket) => socket.destroyed))).toBe(true);
    // With one connection in the undici pool, a held socket would make this call wait forever.
    const next = await caller('k2', 2_000).call(ENDPOINTS['tags/get'], '{}');
    expect(next.status).toBe(200);
  });

  it('answers 502 upstream_unreachable with the cause when nothing listens', async () => {
    const upstream = createUpstream({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k', transport, timeoutMs: 2_000, backoff: { until: 0 }, now: () => clock });
    const error = await upstream.call(ENDPOINTS['tags/get'], '{}').catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 502, code: 'upstream_unreachable' });
    expect((error as Error).cause).toBeDefined();
  });
});

it('a call whose TLS connection is never made (a platform that accepts and says nothing) never left: released, not in doubt', async () => {
  const held: Socket[] = [];
  const mute = createTcpServer((socket) => void held.push(socket));
  await new Promise<void>((resolve) => mute.listen(0, '127.0.0.1', resolve));
  const transport = createNodeHttpTransport();
  try {
    const upstream = createUpstream({
      baseUrl: `https://127.0.0.1:${(mute.address() as AddressInfo).port}`,
      apiKey: 'k',
      transport,
      timeoutMs: 300,
      backoff: { until: 0 },
      now: Date.now,
    });
    const outcome = await callOnce(upstream, 'activities/create', '{"activities":[]}', { timeoutMs: 300, paced: true });
    expect(outcome).toMatchObject({ kind: 'unapplied', message: 'the platform could not be reached' });
  } finally {
    await transport.close();
    for (const socket of held) socket.destroy();
    await new Promise((resolve) => mute.close(resolve));
  }
});

it("aborts a timed-out fetch with the runtime's own AbortError, not a reason of the relay's", async () => {
  // workerd cancels a POST's body still being sent with the signal's reason, and reports any reason
  // but its own AbortError as an uncaught exception (with workerd's binary and a platform that never
  // reads the body: "uncaught exception ... UpstreamTimeout"; an unhandled rejection of a workerd
  // run at load 20). The caller still gets its UpstreamTimeout.
  let signal: AbortSignal | undefined;
  const never: typeof fetch = (_, init) => {
    signal = init?.signal ?? undefined;
    return new Promise(() => {});
  };
  const error = await fetchTransport(never)({ method: 'POST', url: 'http://127.0.0.1:1/v1/activities/create', headers: {}, body: '{}', timeoutMs: 20 }).catch(
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(UpstreamTimeout);
  expect(signal?.aborted).toBe(true);
  expect(signal?.reason).toMatchObject({ name: 'AbortError' });
});

describe('the proxy and the typed client through the undici transport', () => {
  let emulator: RunningEmulator;
  let server: Awaited<ReturnType<typeof platform>>;
  const transport = createUndiciTransport();
  beforeAll(async () => {
    emulator = await startEmulator({ port: 0, key: 'undici-key' });
    server = await platform();
  });
  afterAll(async () => {
    await transport.close();
    await emulator.close();
    await server.close();
  });

  it('does not pass a redirect on', async () => {
    const token = 'rt_undici_token_0000000000000000000000000000';
    const proxy = createProxyRoutes({
      tokens: [{ name: 'u', sha256: await hashToken(token), scopes: ['admin'] }],
      upstream: { baseUrl: server.url, apiKey: 'redirect' },
      transport,
      logger: () => {},
    });
    const answer = await proxy.request('/v1/tags/get', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: '{}' });
    expect(answer.status).toBe(502);
    expect(await answer.json()).toMatchObject({ error: { code: 'upstream_bad_response' } });
  });

  it('serves a merge and a read through the proxy against the emulator, on the pool', async () => {
    const token = 'rt_undici_token_1111111111111111111111111111';
    const proxy = createProxyRoutes({
      tokens: [{ name: 'u', sha256: await hashToken(token), scopes: ['admin'] }],
      upstream: { baseUrl: emulator.url, apiKey: 'undici-key' },
      transport,
      logger: () => {},
    });
    const post = async (path: string, body: unknown) => {
      const response = await proxy.request(path, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
      expect(response.status).toBe(200);
      return (await response.json()) as { people: { status: string; person_id: string }[]; contacts: Record<string, { fields: Record<string, string> }> };
    };
    const merged = await post('/v1/person/merge', { people: [{ fields: { 'str::email': 'undici@example.com' } }] });
    expect(merged.people[0]?.status).toBe('created');
    const found = await post('/v1/person/get', { contact_ids: [merged.people[0]?.person_id], fields: ['str::email'] });
    expect(Object.values(found.contacts)[0]?.fields['str::email']).toBe('undici@example.com');
  });
});
