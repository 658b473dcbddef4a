// What only the Node entry does: the socket address as the visitor's, X-Forwarded-For only
// from RELAY_TRUST_PROXY, /cdp.js and its alias with long cache headers.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';
import { silentLogger } from '../../src/relay/core/logging.js';
import { upstreamControl, type UpstreamControl } from './support/control.js';
import { startUpstreamStack, UPSTREAM_KEY, type UpstreamStack } from './support/stack.js';

const ORIGIN = 'https://shop.example.com';
const SNIPPET = 'window.cdp=window.cdp||function(){};/* test build */';

let stack: UpstreamStack;
let upstream: UpstreamControl;
const relays: RunningRelay[] = [];
beforeAll(async () => {
  stack = await startUpstreamStack();
  upstream = upstreamControl(stack.url);
});
afterAll(async () => {
  for (const relay of relays) await relay.close();
  await stack?.close();
});

async function relayWith(env: Record<string, string> = {}) {
  const relay = await startRelay({
    port: 0,
    logger: silentLogger,
    snippet: SNIPPET,
    env: { CDP_API_KEY: UPSTREAM_KEY, CDP_BASE_URL: stack.url, RELAY_SITES: JSON.stringify([{ key: 'pk_node', origins: [ORIGIN], verify: 'off' }]), ...env },
  });
  relays.push(relay);
  return relay;
}

async function sourceIpFor(relay: RunningRelay, headers: Record<string, string>) {
  await upstream.reset();
  const item = { id: crypto.randomUUID(), type: 'identify', fields: { 'str::email': 'xff@example.com' } };
  const response = await fetch(`${relay.url}/collect`, {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', ...headers },
    body: JSON.stringify({ key: 'pk_node', batch: [item] }),
  });
  expect((await response.json()).results[0].status).toBe('accepted');
  await relay.drained();
  const [call] = (await upstream.received()).filter((c) => c.path.startsWith('/v1/'));
  return call!.body.people[0].location.source_ip as string;
}

describe('the Node entry', () => {
  it('ignores X-Forwarded-For from an untrusted socket (a visitor cannot choose their address)', async () => {
    const relay = await relayWith();
    expect(await sourceIpFor(relay, { 'x-forwarded-for': '198.51.100.23' })).toBe('127.0.0.1');
  });

  it('believes X-Forwarded-For only from RELAY_TRUST_PROXY, taking the right-most untrusted hop', async () => {
    const relay = await relayWith({ RELAY_TRUST_PROXY: '127.0.0.1' });
    expect(await sourceIpFor(relay, { 'x-forwarded-for': '6.6.6.6, 198.51.100.23' })).toBe('198.51.100.23');
    expect(await sourceIpFor(relay, {})).toBe('127.0.0.1');
  });

  it('refuses a streamed body over 512 KB with 413 as soon as it passes the limit (no Content-Length to trust)', async () => {
    const relay = await relayWith();
    const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 10) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const response = await fetch(`${relay.url}/collect`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('body_too_large');
  });

  it('answers POST /collect from node:http in the same shape as the app: CORS, no-store, JSON with its length, bad UTF-8 refused', async () => {
    const relay = await relayWith();
    const item = { id: crypto.randomUUID(), type: 'identify', fields: { 'str::email': 'front@example.com' } };
    const ok = await fetch(`${relay.url}/collect?from=front`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain' },
      body: JSON.stringify({ key: 'pk_node', batch: [item] }),
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(ok.headers.get('cache-control')).toBe('no-store');
    expect(ok.headers.get('content-type')).toMatch(/^application\/json/);
    // The whole answer says its length (one write, no chunked framing).
    const text = await ok.text();
    expect(ok.headers.get('transfer-encoding')).toBeNull();
    expect(ok.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
    expect((JSON.parse(text) as { results: { status: string }[] }).results[0]?.status).toBe('accepted');
    const bad = await fetch(`${relay.url}/collect`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain' },
      body: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('malformed_body');
    // Other methods on the path still go through the app.
    expect((await fetch(`${relay.url}/collect`)).status).toBe(405);
  });

  it('keeps serving after a visitor hangs up in the middle of a body', async () => {
    const relay = await relayWith();
    const { port } = new URL(relay.url);
    const { connect } = await import('node:net');
    await new Promise<void>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(`POST /collect HTTP/1.1\r\nHost: x\r\nOrigin: ${ORIGIN}\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n{"key":"pk_n`);
        setTimeout(() => socket.destroy(), 50);
      });
      socket.on('close', () => resolve());
    });
    const item = { id: crypto.randomUUID(), type: 'identify', fields: { 'str::email': 'after@example.com' } };
    const after = await fetch(`${relay.url}/collect`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain' },
      body: JSON.stringify({ key: 'pk_node', batch: [item] }),
    });
    expect(after.status).toBe(200);
  });

  it('a stop lets the platform call in flight finish and settle: a relay restarted on the same file neither sends it again nor takes it twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-edge-stop-'));
    const env = {
      CDP_API_KEY: UPSTREAM_KEY,
      CDP_BASE_URL: stack.url,
      RELAY_SITES: JSON.stringify([{ key: 'pk_node', origins: [ORIGIN], verify: 'off' }]),
      RELAY_DELIVERY_WAIT_MS: '0',
    };
    const stateFile = join(dir, 'state.db');
    const first = await startRelay({ port: 0, logger: silentLogger, stateFile, env });
    await upstream.reset();
    // The platform takes its time: the stop arrives while the deliverer's call is in flight.
    await upstream.faults([{ delayMs: 600 }]);
    const item = { id: crypto.randomUUID(), type: 'track', activity_id: 'act:cm:viewed', person: { 'str::email': 'stopping@example.com' } };
    const post = (url: string) =>
      fetch(`${url}/collect`, {
        method: 'POST',
        headers: { origin: ORIGIN, 'content-type': 'text/plain' },
        body: JSON.stringify({ key: 'pk_node', batch: [item] }),
      });
    const sent = async () => (await upstream.received()).filter((call) => call.path === '/v1/activities/create');
    expect(((await (await post(first.url)).json()) as { results: { status: string }[] }).results[0]?.status).toBe('accepted');
    // The stop comes once the call has reached the platform (recorded on arrival, answered 600 ms
    // later), not after a guessed pause a loaded machine may not keep to.
    await expect.poll(async () => (await sent()).length, { timeout: 5_000, interval: 20 }).toBe(1);
    await first.close();
    expect((await sent()).map((call) => call.status)).toEqual([200]);
    // A relay started on the same file knows the item: it answers duplicate and has nothing left to send.
    const second = await startRelay({ port: 0, logger: silentLogger, stateFile, env });
    relays.push(second);
    expect(((await (await post(second.url)).json()) as { results: { status: string }[] }).results[0]?.status).toBe('duplicate');
    await second.drained();
    expect(await sent()).toHaveLength(1);
    expect(await second.outbox.deadLetters()).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the snippet at /cdp.js and at the alias with long cache headers and an ETag', async () => {
    const relay = await relayWith({ RELAY_SCRIPT_PATH: '/assets/app.js' });
    for (const path of ['/cdp.js', '/assets/app.js']) {
      const response = await fetch(`${relay.url}${path}`);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe(SNIPPET);
      expect(response.headers.get('content-type')).toContain('javascript');
      expect(response.headers.get('cache-control')).toMatch(/public, max-age=\d{6,}/);
      const etag = response.headers.get('etag')!;
      const again = await fetch(`${relay.url}${path}`, { headers: { 'if-none-match': etag } });
      expect(again.status).toBe(304);
    }
  });

  it('reads the built snippet from dist/cdp.js by default', async () => {
    const relay = await startRelay({ port: 0, logger: silentLogger, env: { CDP_API_KEY: UPSTREAM_KEY, CDP_BASE_URL: stack.url } });
    relays.push(relay);
    const response = await fetch(`${relay.url}/cdp.js`);
    const { existsSync, readFileSync } = await import('node:fs');
    const built = new URL('../../dist/cdp.js', import.meta.url);
    if (existsSync(built)) {
      expect(response.status).toBe(200);
      expect(await response.text()).toBe(readFileSync(built, 'utf8'));
    } else {
      expect(response.status).toBe(404);
      expect((await response.json()).error.code).toBe('snippet_not_built');
    }
  });
});
