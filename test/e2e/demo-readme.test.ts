/**
 * README.md's browser blocks, as written, in real Chromium: the script tag and the calls after
 * it, and the ESM import, on a page of their own against a real relay (identity verification
 * required) and the emulator. The person and events are then found with the typed client.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/client/index.js';
import { seedDemo } from '../../src/demo/seed.js';
import { identityHash } from '../../src/relay/ingest/identity.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/node.js';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';
import { readmeBlocks } from '../readme-blocks.js';
import { chromiumAvailable, launchChromium } from './chromium.js';

const available = chromiumAvailable('README browser blocks (test/e2e/demo-readme.test.ts)');
const SECRET = 'readme-e2e-identity-secret-0123456789';
const EMAIL = 'ann@example.com';

describe.runIf(available)("README's browser blocks in Chromium", () => {
  const blocks = readmeBlocks();
  const html = blocks.filter((b) => b.lang === 'html');
  const js = blocks.filter((b) => b.lang === 'js');
  let emulator: RunningEmulator;
  let relay: RunningRelay;
  let pages: Server;
  let site = '';
  let browser: Browser;
  let client: Client;

  beforeAll(async () => {
    emulator = await startEmulator({ port: 0, key: 'dev-key' });
    client = createClient({ apiKey: 'dev-key', baseUrl: emulator.url, retry: false });
    await seedDemo(client);
    const fill = (code: string) => code.replaceAll('https://t.example.com', relay.url).replaceAll("'cdp-edge/browser'", "'/browser.js'");
    const head = `<meta name="user-hash" content="${await identityHash(SECRET, 'str::email', EMAIL)}">`;
    pages = createServer((req, res) => {
      const send = (type: string, body: string) => res.writeHead(200, { 'content-type': type }).end(body);
      if (req.url === '/')
        return send(
          'text/html',
          `<!doctype html><html><head><title>readme</title>${head}${fill(html[0]!.code)}<script src="/calls.js"></script></head><body>tag</body></html>`,
        );
      if (req.url === '/calls.js') return send('text/javascript', fill(js[0]!.code));
      if (req.url === '/esm')
        return send(
          'text/html',
          `<!doctype html><html><head><title>esm</title>${head}<script type="module" src="/app.js"></script></head><body>esm</body></html>`,
        );
      if (req.url === '/app.js') return send('text/javascript', fill(js[1]!.code));
      if (req.url === '/browser.js') return send('text/javascript', readFileSync(join(import.meta.dirname, '..', '..', 'dist', 'browser.js'), 'utf8'));
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
    site = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
    relay = await startRelay({
      port: 0,
      logger: () => {},
      env: {
        CDP_API_KEY: 'dev-key',
        CDP_BASE_URL: emulator.url,
        RELAY_SITES: JSON.stringify([{ key: 'pk_live_123', origins: [site], verify: 'required' }]),
        RELAY_IDENTITY_SECRET: SECRET,
      },
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => pages?.close(resolve));
    await relay?.close();
    await emulator?.close();
  });

  const occurred = async (activity: string, attributes?: Record<string, unknown>) =>
    (
      await client.person.get({
        fields: ['str::first'],
        filter: {
          $andgroup: [
            { '$str::is': { field_id: 'str::email', value: EMAIL } },
            { '$act::has_occurred': { field_id: activity, ...(attributes ? { value: { attributes } } : {}) } },
          ],
        },
      })
    ).contacts ?? [];

  it('README has one script tag and two browser blocks (the calls, the ESM import)', () => {
    expect(html).toHaveLength(1);
    expect(js).toHaveLength(2);
    expect(js[1]!.code).toContain("from 'cdp-edge/browser'");
  });

  it('the script tag and the calls after it: page view, track and a verified identify arrive', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.goto(`${site}/`);
    await expect.poll(() => occurred('act:cm:added-to-cart'), { timeout: 20_000 }).toEqual([expect.objectContaining({ fields: { 'str::first': 'Ann' } })]);
    await expect.poll(() => occurred('act:cm:page-view'), { timeout: 20_000 }).toHaveLength(1);
    expect(problems).toEqual([]);
  });

  it('the ESM import: identify and track with createTracker', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.goto(`${site}/esm`);
    await expect.poll(() => occurred('act:cm:signed-up', { 'str:cm:plan': 'pro' }), { timeout: 20_000 }).toHaveLength(1);
    expect(problems).toEqual([]);
  });
});
