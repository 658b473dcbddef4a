// The nginx and Caddy recipes of docs/deploy.md, exactly as written there, in Debian's nginx and
// Caddy in front of a relay and the emulator: /t/cdp.js and /t/collect are the relay's, a /collect
// keeps the visitor's address (a made-up X-Forwarded-For is never read), and without
// RELAY_TRUST_PROXY the relay would see the proxy's address instead.
import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { silentLogger } from '../../src/relay/core/logging.js';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';
import { caddyAvailable, nginxAvailable, type RunningNginx, startCaddy, startNginx } from '../support/nginx.js';
import { freePort } from '../support/redis.js';
import { KEY, ORIGIN, root, SITE_KEY, SITES, upstream } from './support.js';

const SNIPPET = 'window.cdp=window.cdp||function(){};/* routing test */';
/** The address the visitor connects from: loopback, but not the proxy's own 127.0.0.1. */
const VISITOR = '127.0.0.2';

/** The first block of docs/deploy.md fenced as `lang`. */
function recipe(lang: string): string {
  const page = readFileSync(join(root, 'docs', 'deploy.md'), 'utf8');
  const block = new RegExp(`^\`\`\`${lang}\n([\\s\\S]*?)^\`\`\`$`, 'm').exec(page)?.[1];
  if (block === undefined) throw new Error(`docs/deploy.md has no \`\`\`${lang} block`);
  return block;
}

/** How each recipe is run: its block inside a site of the proxy on `port`. */
const PROXIES = {
  nginx: {
    available: nginxAvailable,
    lang: 'nginx',
    start: (block: string, port: number) => startNginx(`server {\n  listen 127.0.0.1:${port};\n${block}\n}`, port),
  },
  caddy: { available: caddyAvailable, lang: 'caddyfile', start: (block: string, port: number) => startCaddy(`http://127.0.0.1:${port} {\n${block}\n}`, port) },
};

describe.each(Object.entries(PROXIES))('the %s recipe of docs/deploy.md', (name, proxy) => {
  const available = proxy.available(`test/deploy/routing.test.ts (${name})`);
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

  /** A relay with `env`, behind the proxy running the recipe (its relay address replaced by this relay's); the proxy's address. */
  async function behindProxy(env: Record<string, string>): Promise<string> {
    const relay = await startRelay({
      port: 0,
      logger: silentLogger,
      snippet: SNIPPET,
      env: { CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, RELAY_SITES: SITES, ...env },
    });
    relays.push(relay);
    const text = recipe(proxy.lang);
    expect(text).toContain('127.0.0.1:8787');
    const port = await freePort();
    proxies.push(await proxy.start(text.replaceAll('127.0.0.1:8787', `127.0.0.1:${relay.port}`), port));
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

  /** Sends one track for `email` through the proxy; the address the platform got for that person. */
  async function addressSeen(address: string, email: string): Promise<string | undefined> {
    const item = { id: crypto.randomUUID(), type: 'track', ts: new Date().toISOString(), activity_id: 'act:cm:signed-up', person: { 'str::email': email } };
    const answer = await fromVisitor(address, 'POST', '/t/collect', JSON.stringify({ key: SITE_KEY, batch: [item] }));
    expect(answer.status, answer.body).toBe(200);
    expect(JSON.parse(answer.body).results[0].status).toBe('accepted');
    const person = () => [...emulator.emulator.state.people.values()].find((p) => p.fields['str::email'] === email);
    await expect.poll(() => person()?.events.length, { timeout: 15_000 }).toBe(1);
    return person()?.location?.ip?.address;
  }

  it.runIf(available)('serves /t/cdp.js and /t/collect from the relay, and a /collect keeps the visitor address', async () => {
    const address = await behindProxy({ RELAY_TRUST_PROXY: '127.0.0.1' });
    const script = await fromVisitor(address, 'GET', '/t/cdp.js');
    expect(script.status).toBe(200);
    expect(script.type).toMatch(/javascript/);
    expect(script.body).toBe(SNIPPET);
    // Only those two paths are the relay's: its /healthz (as any other path) is not served there.
    const relayHealth = await (await fetch(`http://127.0.0.1:${relays.at(-1)!.port}/healthz`)).text();
    expect(relayHealth).not.toBe('');
    expect((await fromVisitor(address, 'GET', '/t/healthz')).body).not.toBe(relayHealth);
    expect(await addressSeen(address, `${name}-visitor@example.com`)).toBe(VISITOR);
  });

  it.runIf(available)('without RELAY_TRUST_PROXY the relay sees the proxy, not the visitor', async () => {
    const address = await behindProxy({});
    expect(await addressSeen(address, `${name}-untrusted@example.com`)).toBe('127.0.0.1');
  });
});
