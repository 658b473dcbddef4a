/** createNodeFetch: the node:http `fetch` the relay's Node entry gives the proxy (and may give its client). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { createProxyRoutes } from '../../src/relay/proxy/index.js';
import { createNodeFetch } from '../../src/relay/node-fetch.js';
import { RAW_ANSWER, type WithRawAnswer } from '../../src/relay/proxy/raw-answer.js';
import { hashToken } from '../../src/relay/tokens.js';
import { listen } from './proxy-http.js';

describe('createNodeFetch', () => {
  const nodeFetch = createNodeFetch();
  let release!: () => void;
  let server: Awaited<ReturnType<typeof listen>>;
  let emulator: RunningEmulator;
  const big = 'x'.repeat(200 * 1024);

  beforeAll(async () => {
    server = await listen(async (request) => {
      const path = new URL(request.url).pathname;
      if (path === '/small')
        return new Response(JSON.stringify({ echo: await request.text(), key: request.headers.get('x-api-key') }), {
          headers: { 'content-type': 'application/json', 'retry-after': '3' },
        });
      if (path === '/chunked-small') {
        const stream = new ReadableStream({
          start: (c) => (c.enqueue(new TextEncoder().encode('{"a":')), c.enqueue(new TextEncoder().encode('1}')), c.close()),
        });
        return new Response(stream, { headers: { 'content-type': 'application/json' } });
      }
      if (path.startsWith('/redirect')) return new Response(null, { status: 302, headers: { location: 'http://127.0.0.1:1/elsewhere' } });
      const released = new Promise<void>((resolve) => (release = resolve));
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(new TextEncoder().encode(big));
          await released;
          controller.enqueue(new TextEncoder().encode('END'));
          controller.close();
        },
      });
      return new Response(stream, { headers: { 'content-type': 'text/plain' } });
    });
    emulator = await startEmulator({ port: 0, key: 'node-fetch-key' });
  });
  afterAll(async () => {
    await server.close();
    await emulator.close();
  });

  it('hands a small answer over whole, with its length and the raw answer for the proxy', async () => {
    const response = (await nodeFetch(`${server.url}/small`, {
      method: 'POST',
      headers: { 'x-api-key': 'k1', 'content-type': 'application/json' },
      body: '{"n":1}',
    })) as WithRawAnswer;
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe(String((await response.clone().arrayBuffer()).byteLength));
    expect(await response.json()).toEqual({ echo: '{"n":1}', key: 'k1' });
    expect(response[RAW_ANSWER]).toMatchObject({ contentType: 'application/json', retryAfter: '3' });
  });

  it('collects a small chunked answer whole too', async () => {
    const response = await nodeFetch(`${server.url}/chunked-small`);
    expect(response.headers.get('transfer-encoding')).toBeNull();
    expect(await response.json()).toEqual({ a: 1 });
  });

  it('streams a large answer: its first 64 kB arrive before the server has finished', async () => {
    const response = await nodeFetch(`${server.url}/large`);
    const reader = response.body!.getReader();
    let received = 0;
    while (received < big.length) {
      const { done, value } = await reader.read();
      if (done) break;
      received += value.byteLength;
    }
    expect(received).toBe(big.length);
    release();
    let tail = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      tail += new TextDecoder().decode(value);
    }
    expect(tail).toBe('END');
  });

  it('never follows a redirect, and the proxy does not pass one on', async () => {
    const response = await nodeFetch(`${server.url}/redirect`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(302);
    const token = 'rt_node_fetch_token_0000000000000000000000000';
    const proxy = createProxyRoutes({
      tokens: [{ name: 'nf', sha256: await hashToken(token), scopes: ['admin'] }],
      upstream: { baseUrl: `${server.url}/redirect`, apiKey: 'k' },
      fetch: nodeFetch,
      logger: () => {},
    });
    const answer = await proxy.request('/v1/tags/get', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: '{}' });
    expect(answer.status).toBe(502);
    expect(await answer.json()).toMatchObject({ error: { code: 'upstream_bad_response' } });
  });

  it('serves the typed client too (ky sends Request objects)', async () => {
    const client = createClient({ apiKey: 'node-fetch-key', baseUrl: emulator.url, fetch: nodeFetch });
    const merged = await client.person.merge({ people: [{ fields: { 'str::email': 'nodefetch@example.com' } }] });
    expect(merged.people?.[0]?.status).toBe('created');
    const found = await client.person.getByIds({ contact_ids: [merged.people![0]!.person_id!], fields: ['str::email'] });
    expect(Object.values(found.contacts)[0]?.fields['str::email']).toBe('nodefetch@example.com');
  });
});
