// The nginx recipe of docs/deploy.md, exactly as written there, in Debian's nginx in front of a
// relay and the emulator: /t/cdp.js and /t/collect are the relay's, a /collect keeps the visitor's
// address (a made-up X-Forwarded-For is never read), and without RELAY_TRUST_PROXY the relay would
// see nginx's address instead.
import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { silentLogger } from '../../src/relay/core/logging.js';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';
import { nginxAvailable, startNginx, type RunningNginx } from '../support/nginx.js';
import { freePort } from '../support/redis.js';
import { KEY, ORIGIN, root, SITE_KEY, SITES, upstream } from './support.js';

const SNIPPET = 'window.cdp=window.cdp||function(){};/* nginx test */';
/** The address the visitor connects from: loopback, but not nginx's own 127.0.0.1. */
const VISITOR = '127.0.0.2';

/** The first ```nginx block of docs/deploy.md. */
function recipe(): string {
  const page = readFileSync(join(root, 'docs', 'deploy.md'), 'utf8');
  const block = /^```nginx\n([\s\S]*?)^```$/m.exec(page)?.[1];
  if (block === undefined) throw new Error('docs/deploy.md has no ```nginx block');
  return block;
}

const available = nginxAvailable('test/deploy/nginx.test.ts');

describe.runIf(available)('the nginx recipe of docs/deploy.md', () => {
  let emulator: RunningEmulator;
  const relays: RunningRelay[] = [];
  const proxies: RunningNginx[] = [];
  beforeAll(async () => {
    emulator = await upstream();
  });
  afterAll(async () => {
    for (const proxy of proxies) await proxy.close();
    for (const relay of relays) await relay.close();
    await emulator?.close();
  });

  /** A relay with `env`, behind nginx running the recipe (its relay address replaced by this relay's); nginx's address. */
  async function behindNginx(env: Record<string, string>): Promise<string> {
    const relay = await startRelay({
      port: 0,
      logger: silentLogger,
      snippet: SNIPPET,
      env: { CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, RELAY_SITES: SITES, ...env },
    });
    relays.push(relay);
    const text = recipe();
    expect(text).toContain('http://127.0.0.1:8787/');
    const port = await freePort();
    proxies.push(await startNginx(`server {\n  listen 127.0.0.1:${port};\n${text.replaceAll('127.0.0.1:8787', `127.0.0.1:${relay.port}`)}\n}`, port));
    return `127.0.0.1:${port}`;
  }

  /** A request from the visitor's address, with the X-Forwarded-For a visitor might make up. */
  const fromVisitor = (address: string, method: string, path: string, body?: string) =>
    new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const [host, port] = address.split(':');
      const req = request(
        {
          host,
          port: Number(port),
          method,
          path,
          localAddress: VISITOR,
          headers: { origin: ORIGIN, 'content-type': 'text/plain', 'x-forwarded-for': '198.51.100.7' },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body: text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  /** Sends one track for `email` through nginx; the address the platform got for that person. */
  async function addressSeen(address: string, email: string): Promise<string | undefined> {
    const item = { id: crypto.randomUUID(), type: 'track', ts: new Date().toISOString(), activity_id: 'act:cm:signed-up', person: { 'str::email': email } };
    const answer = await fromVisitor(address, 'POST', '/t/collect', JSON.stringify({ key: SITE_KEY, batch: [item] }));
    expect(answer.status, answer.body).toBe(200);
    expect(JSON.parse(answer.body).results[0].status).toBe('accepted');
    const person = () => [...emulator.emulator.state.people.values()].find((p) => p.fields['str::email'] === email);
    await expect.poll(() => person()?.events.length, { timeout: 15_000 }).toBe(1);
    return person()?.location?.ip?.address;
  }

  it('serves /t/cdp.js and /t/collect from the relay, and a /collect keeps the visitor address', async () => {
    const nginx = await behindNginx({ RELAY_TRUST_PROXY: '127.0.0.1' });
    const script = await fromVisitor(nginx, 'GET', '/t/cdp.js');
    expect(script.status).toBe(200);
    expect(script.type).toMatch(/javascript/);
    expect(script.body).toBe(SNIPPET);
    // Only those two paths are the relay's.
    expect((await fromVisitor(nginx, 'GET', '/t/healthz')).status).toBe(404);
    expect(await addressSeen(nginx, 'nginx-visitor@example.com')).toBe(VISITOR);
  });

  it('without RELAY_TRUST_PROXY the relay sees nginx, not the visitor', async () => {
    const nginx = await behindNginx({});
    expect(await addressSeen(nginx, 'nginx-untrusted@example.com')).toBe('127.0.0.1');
  });
});
