/**
 * demo/next, the App Router example, as a site runs it: `next build`, `next start` behind nginx
 * (which appends the visitor's address to X-Forwarded-For), a real relay that trusts only the Next
 * server's address, the emulator behind it, and Chromium as the visitor on [::1]. The page reaches
 * the relay only through the site's own origin (`withCdpEdge`'s rewrites of /t/collect and
 * /t/cdp.js); the layout signs the visitor in with `userHashFor` on the server, and
 * `<CdpProvider>`, `useIdentify` and `usePageViews` do the rest. Every event reaches the emulator
 * once, and the person carries the visitor's address (::1), not the Next server's (127.0.0.1).
 *
 * `next build` takes a minute or more on two cores, so this file is its own run (`npm run
 * test:next`, vitest.next.config.ts), a separate step of .ci/run after `npm test`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/node.js';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';
import { chromiumAvailable, launchChromium } from '../e2e/chromium.js';
import { ensureBuilt, root } from '../support/built.js';
import type { RunningNginx } from '../support/nginx.js';
import { DEMO, freePort, nextBuild, nextStart, nginxAvailable, nginxFront, type Proc } from './servers.js';

const PLATFORM_KEY = 'next-e2e-platform-key';
const SITE_KEY = 'pk_next_e2e';
const SECRET = 'next-e2e-identity-secret-0123456789';
const EMAIL = 'ann@example.com';
const suite = 'the Next.js example (test/next/next.test.ts)';
const available = chromiumAvailable(suite) && nginxAvailable(suite);

describe.runIf(available)('demo/next built and started, behind nginx, with withCdpEdge, CdpProvider and userHashFor', () => {
  let emulator: RunningEmulator;
  let relay: RunningRelay;
  let next: Proc;
  let nginx: RunningNginx;
  let browser: Browser;
  let site = '';

  beforeAll(async () => {
    ensureBuilt();
    emulator = await startEmulator({ port: 0, key: PLATFORM_KEY, plan: 'business' });
    const define = async (name: string, attributes: string[]) => {
      const answer = await fetch(`${emulator.url}/v1/definitions/activity/create`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': PLATFORM_KEY },
        body: JSON.stringify({ name, attributes: attributes.map((attribute) => ({ name: attribute, display_type: 'text' })) }),
      });
      if (!answer.ok) throw new Error(`seeding ${name}: ${answer.status} ${await answer.text()}`);
    };
    await define('page-view', ['url', 'path', 'title', 'referrer']);
    await define('signed-up', ['plan']);

    const sitePort = await freePort('::1');
    const nextPort = await freePort('127.0.0.1');
    site = `http://[::1]:${sitePort}`;
    relay = await startRelay({
      port: 0,
      logger: () => {},
      env: {
        CDP_API_KEY: PLATFORM_KEY,
        CDP_BASE_URL: emulator.url,
        RELAY_IDENTITY_SECRET: SECRET,
        RELAY_SITES: JSON.stringify([{ key: SITE_KEY, origins: [site], verify: 'required' }]),
        // The relay sees the Next server (127.0.0.1) and believes the X-Forwarded-For it passes on.
        RELAY_TRUST_PROXY: '127.0.0.1',
      },
    });
    await nextBuild({ CDP_EDGE_RELAY: relay.url, NEXT_PUBLIC_CDP_SITE_KEY: SITE_KEY });
    next = await nextStart(nextPort, { RELAY_IDENTITY_SECRET: SECRET });
    nginx = await nginxFront(sitePort, `http://127.0.0.1:${nextPort}`);
    browser = await launchChromium();
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    await nginx?.close();
    await next?.stop();
    await relay?.close();
    await emulator?.close();
  });

  it('keeps the server helper and its secret out of the browser bundle', () => {
    const shipped = readdirSync(join(DEMO, '.next', 'static'), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.js'))
      .map((entry) => readFileSync(join(entry.parentPath, entry.name), 'utf8'));
    expect(
      shipped.some((code) => code.includes('act:cm:page-view')),
      'the tracker is in the client bundle',
    ).toBe(true);
    for (const code of shipped) {
      expect(code).not.toContain('RELAY_IDENTITY_SECRET');
      expect(code).not.toContain(SECRET);
      expect(code).not.toContain('userHashFor');
    }
  });

  it('serves the relay’s script under the site’s origin', async () => {
    const answer = await fetch(`${site}/t/cdp.js`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/javascript/);
    expect(await answer.text()).toBe(readFileSync(join(root, 'dist', 'cdp.js'), 'utf8'));
  });

  it('a signed-in visit: one identify with the server’s proof, one page view per route, one track, each once, with the visitor’s address', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (message) => void (message.type() === 'error' && problems.push(message.text())));
    page.on('response', (response) => void (response.status() >= 400 && problems.push(`${response.status()} ${response.url()}`)));
    const collects: string[] = [];
    page.on('request', (request) => void (request.url().includes('/collect') && collects.push(request.url())));

    await page.goto(`${site}/signin?email=${encodeURIComponent(EMAIL)}`);
    await page.waitForURL(`${site}/`);
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByRole('link', { name: 'About' }).click();
    await page.waitForURL(`${site}/about`);
    await page.getByRole('heading', { name: 'About' }).waitFor();
    // Everything the page holds goes now, then the relay's outbox drains: what the emulator has is final.
    await page.evaluate(async () => {
      const registry = (globalThis as unknown as Record<symbol, { trackers: Map<string, { flush(): Promise<void> }> }>)[Symbol.for('cdp-edge.react')];
      for (const tracker of registry?.trackers.values() ?? []) await tracker.flush();
    });
    await relay.drained({ timeoutMs: 30_000 });

    const person = emulator.emulator.snapshot().people.find((p) => p.fields?.['str::email'] === EMAIL);
    expect(person, 'the identify reached the platform as a verified merge').toBeDefined();
    const events = (person!.events ?? []).map((event) => [event.activity_id, event.attributes['str:cm:path'] ?? event.attributes['str:cm:plan']]);
    expect(events.sort()).toEqual([
      ['act:cm:page-view', '/'],
      ['act:cm:page-view', '/about'],
      ['act:cm:signed-up', 'pro'],
    ]);
    // The visitor's address through nginx and Next's rewrite, not the Next server's.
    expect(person!.location?.ip?.address).toBe('::1');
    // The page spoke only to its own origin.
    expect(collects.length).toBeGreaterThan(0);
    expect(collects.every((url) => url.startsWith(`${site}/t/collect`))).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  });
});
