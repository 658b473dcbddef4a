/**
 * The demo as a user meets it after `npm start`: Chromium opens the shop page served by the
 * dev command's own code (startDevStack), adds to cart, signs up and grants consent; the
 * person and their events are then found in the emulator through the typed client, and the
 * demo page and the emulator dashboard are photographed into test-results/ (kept as artifacts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { PNG } from 'pngjs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/client/index.js';
import { createServer } from 'node:net';
import { startDemoServer } from '../../src/demo/server.js';
import { EMULATOR_KEY, startDevStack, type DevStack } from '../../src/demo/stack.js';
import { chromiumAvailable, launchChromium } from './chromium.js';
import { flushSnippet } from './snippet-stack.js';

const available = chromiumAvailable('demo end-to-end (test/e2e/demo.test.ts)');

/** Writes the screenshot to test-results/ and counts its distinct colours (a blank page has one). */
function keep(name: string, png: Buffer): number {
  mkdirSync('test-results', { recursive: true });
  writeFileSync(`test-results/${name}.png`, png);
  const { data } = PNG.sync.read(png);
  const colours = new Set<number>();
  for (let i = 0; i < data.length && colours.size < 50; i += 4) colours.add(data.readUInt32BE(i));
  return colours.size;
}

describe.runIf(available)('the demo in Chromium (what npm start serves)', () => {
  let stack: DevStack;
  let browser: Browser;
  let client: Client;
  const email = `demo-${Date.now()}@example.com`;

  beforeAll(async () => {
    stack = await startDevStack({ emulatorPort: { port: 0 }, relayPort: { port: 0 }, demoPort: { port: 0 } });
    client = createClient({ apiKey: EMULATOR_KEY, baseUrl: stack.emulator!.url, retry: false });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  const logText = (page: Page) => page.locator('#log').innerText();

  /** The people with `email` and whether each demo activity happened for them, via person/get filters. */
  const happened = async (activity: string) => {
    const answer = await client.person.get({
      fields: ['str::email', 'str::first'],
      filter: { $andgroup: [{ '$str::is': { field_id: 'str::email', value: email } }, { '$act::has_occurred': { field_id: activity } }] },
    });
    return answer.contacts ?? [];
  };

  it('add to cart, sign up and accept: the person and events reach the emulator, and the pages are not blank', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    // The page carries the README's script tag, pointed at this run's relay.
    const html = await (await fetch(`${stack.demo.url}/`)).text();
    expect(html).toContain(
      `cdp('init',{relay:'${stack.relay.url}',key:'${stack.siteKey}',consent:'store-only'});</script>\n<script async src="${stack.relay.url}/cdp.js"></script>`,
    );
    await page.goto(`${stack.demo.url}/`);
    await page.waitForFunction(() => (window as unknown as { cdp?: { loaded?: boolean } }).cdp?.loaded === true);
    await expect.poll(() => logText(page)).toContain('page view');
    expect(await page.locator('#banner').isVisible()).toBe(true);
    expect(await page.locator('#consent-state').innerText()).toBe('pending');

    await page.locator('.product', { hasText: 'Shortbread' }).getByRole('button', { name: 'Add to cart' }).click();
    await page.fill('input[name=email]', email.toUpperCase()); // the demo server normalises it before signing
    await page.fill('input[name=first]', 'Eve');
    await page.selectOption('select[name=plan]', 'pro');
    await page.click('#signup button[type=submit]');
    await expect.poll(() => logText(page)).toContain('stored signed-up');
    // Consent is pending: everything is kept in the browser and nothing was sent.
    expect(await logText(page)).not.toMatch(/sent\s+\d+ items? to the relay/);
    expect(await happened('act:cm:signed-up')).toEqual([]);

    await page.click('#accept');
    expect(await page.locator('#banner').isVisible()).toBe(false);
    await expect.poll(() => logText(page), { timeout: 15_000 }).toMatch(/answer\s+accepted \d/);

    for (const activity of ['act:cm:page-view', 'act:cm:added-to-cart', 'act:cm:signed-up']) {
      await expect
        .poll(() => happened(activity), { timeout: 15_000 })
        .toEqual([expect.objectContaining({ fields: { 'str::email': email, 'str::first': 'Eve' } })]);
    }
    expect(await logText(page)).not.toMatch(/rejected/);
    expect(problems).toEqual([]);
    expect(keep('demo-page', await page.screenshot({ fullPage: true }))).toBeGreaterThan(1);

    const dashboard = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    await dashboard.goto(`${stack.emulator!.url}/`);
    const text = await dashboard.locator('body').innerText();
    expect(text).toContain(email);
    expect(text).toContain('act:cm:added-to-cart');
    expect(keep('emulator-dashboard', await dashboard.screenshot({ fullPage: true }))).toBeGreaterThan(1);
  });

  it('going offline keeps events; back online they arrive once', async () => {
    const page = await browser.newPage(); // a new context: its own IndexedDB, consent pending again
    await page.goto(`${stack.demo.url}/`);
    await page.waitForFunction(() => (window as unknown as { cdp?: { loaded?: boolean } }).cdp?.loaded === true);
    await page.click('#accept');
    const offlineEmail = `offline-${Date.now()}@example.com`;
    await page.fill('input[name=email]', offlineEmail);
    await page.click('#signup button[type=submit]');
    await expect.poll(() => logText(page), { timeout: 15_000 }).toMatch(/answer\s+accepted/);
    await page.check('#offline');
    await page.locator('.product', { hasText: 'Blue teapot' }).getByRole('button', { name: 'Add to cart' }).click();
    await expect.poll(() => logText(page), { timeout: 15_000 }).toContain('offline: the request failed');
    const teapots = () => {
      const person = stack.emulator!.emulator.snapshot().people.find((p) => p.fields?.['str::email'] === offlineEmail);
      return (person?.events ?? []).filter((e) => e.activity_id === 'act:cm:added-to-cart').map((e) => e.attributes['str:cm:product']);
    };
    expect(teapots()).toEqual([]);
    await page.uncheck('#offline');
    await expect.poll(teapots, { timeout: 15_000 }).toEqual(['Blue teapot']);
    await page.click('#flush'); // one more send: nothing is left to go twice
    // Once that flush is over and the relay is idle, nothing more can arrive.
    await page.evaluate(flushSnippet);
    await stack.relay.drained();
    expect(teapots()).toEqual(['Blue teapot']);
  });

  it('declining consent deletes what was kept and sends nothing; the choice can be changed', async () => {
    const page = await browser.newPage();
    await page.goto(`${stack.demo.url}/`);
    await page.waitForFunction(() => (window as unknown as { cdp?: { loaded?: boolean } }).cdp?.loaded === true);
    const declined = `declined-${Date.now()}@example.com`;
    await page.fill('input[name=email]', declined);
    await page.click('#signup button[type=submit]');
    await expect.poll(() => logText(page)).toContain('stored signed-up');
    await page.click('#decline');
    expect(await page.locator('#consent-state').innerText()).toBe('denied');
    await expect.poll(() => logText(page)).toContain('consent denied');
    await page.click('#consent-change');
    expect(await page.locator('#banner').isVisible()).toBe(true);
    await page.click('#accept'); // nothing was kept, so nothing is sent now either
    // Not even by a flush: once it ran and the relay is idle, nothing was sent or arrived.
    await page.evaluate(flushSnippet);
    await stack.relay.drained();
    expect(await logText(page)).not.toMatch(/sent\s+\d+ items? to the relay/);
    expect(stack.emulator!.emulator.snapshot().people.some((p) => p.fields?.['str::email'] === declined)).toBe(false);
  });

  it('the SPA tracks client-side route changes as page views with the ESM build', async () => {
    const page = await browser.newPage();
    await page.goto(`${stack.demo.url}/spa/`);
    await page.click('a[href="/spa/teas"]');
    await page.click('a[href="/spa/about"]');
    expect(page.url()).toBe(`${stack.demo.url}/spa/about`);
    await page.click('a[href="/spa/account"]');
    const spaEmail = `spa-${Date.now()}@example.com`;
    await page.fill('input[name=email]', spaEmail);
    await page.click('#signin button[type=submit]');
    await expect.poll(() => page.locator('#log').innerText()).toContain(`signed in as ${spaEmail}`);
    const paths = () => {
      const person = stack.emulator!.emulator.snapshot().people.find((p) => p.fields?.['str::email'] === spaEmail);
      return (person?.events ?? []).filter((e) => e.activity_id === 'act:cm:page-view').map((e) => e.attributes['str:cm:path']);
    };
    await expect.poll(paths, { timeout: 15_000 }).toEqual(expect.arrayContaining(['/spa/', '/spa/teas', '/spa/about', '/spa/account']));
  });

  it('when cdp.js cannot load (the relay is gone): every call says so in the log, nothing is an unhandled rejection; the favicon is served', async () => {
    // A port that was free a moment ago: nothing answers there.
    const dead = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const demo = await startDemoServer({ port: 0, config: () => ({ relay: `http://127.0.0.1:${dead}`, key: 'pk_demo', identitySecret: 'not-used' }) });
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      const missing: string[] = [];
      page.on('pageerror', (e) => problems.push(String(e)));
      page.on('response', (response) => {
        if (response.status() === 404) missing.push(response.url());
      });
      await page.goto(`${demo.url}/`);
      await page.click('#flush');
      await page.click('#reset');
      await page.click('#accept');
      // The page waits up to 5 s for the snippet, then logs why each call failed: the page view, flush, reset, consent.
      await expect.poll(async () => (await logText(page)).match(/the snippet did not load/g)?.length ?? 0, { timeout: 15_000 }).toBeGreaterThanOrEqual(4);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(problems).toEqual([]);
      expect(missing).toEqual([]);
      const icon = await fetch(`${demo.url}/favicon.svg`);
      expect(icon.status).toBe(200);
      expect(icon.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
      expect(await page.locator('link[rel=icon]').getAttribute('href')).toBe('/favicon.svg');
    } finally {
      await demo.close();
    }
  });
});
