/**
 * The snippet in real Chromium against the real relay and emulator: every event sent from
 * a script-tag page is counted at the emulator — 0 lost, 0 duplicated — through going
 * offline, reloading mid-flush, closing the tab, two tabs at once, consent and a 503.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, launchChromium } from './chromium.js';
import { ACTIVITY, PLATFORM_KEY, startStack, type Stack } from './snippet-stack.js';

const available = chromiumAvailable('snippet end-to-end (test/e2e/snippet.test.ts)');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.runIf(available)('the snippet in Chromium, against the relay and emulator', () => {
  let stack: Stack;
  let browser: Browser;
  let person = 0;

  beforeAll(async () => {
    stack = await startStack();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  const newPerson = () => `e2e-${++person}-${Date.now()}@example.com`;

  async function open(context: BrowserContext, init: Record<string, unknown> = {}, flags: { twice?: boolean; esm?: boolean } = {}): Promise<Page> {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    page.on('console', (m) => m.type() === 'error' && !m.text().includes('Failed to load resource') && problems.push(m.text()));
    (page as Page & { problems?: string[] }).problems = problems;
    await page.goto(stack.pageUrl({ flushInterval: 100, ...init }, flags));
    await page.waitForFunction(() => (window as unknown as { cdp?: { loaded?: boolean } }).cdp?.loaded === true);
    return page;
  }

  /** identify (when `email`) and track events `from`…`from+count-1`; resolves once all are stored. */
  const send = (page: Page, email: string | undefined, from: number, count: number) =>
    page.evaluate(
      async ({ email, from, count, activity }) => {
        const cdp = (window as unknown as { cdp: Record<string, (...a: unknown[]) => Promise<void>> }).cdp;
        if (email) await cdp['identify']!({ 'str::email': email });
        await Promise.all(Array.from({ length: count }, (_, i) => cdp['track']!(activity, { 'str:cm:n': String(from + i) })));
      },
      { email, from, count, activity: ACTIVITY },
    );

  const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => String(from + i));

  /** Every page open in the browser (each context's), for Stack.settled. */
  const openPages = () => browser.contexts().flatMap((context) => context.pages());

  /** Waits until the emulator holds `expected` for `email`, then until nothing more can arrive (Stack.settled): exactly those, once each. */
  async function arrivesExactlyOnce(email: string, expected: string[]) {
    await expect.poll(() => stack.received(email).length, { timeout: 45_000, interval: 100 }).toBeGreaterThanOrEqual(expected.length);
    await stack.settled(openPages());
    expect(stack.received(email).sort()).toEqual([...expected].sort());
  }

  it('events from a script-tag page arrive once (strict CSP, no eval)', async () => {
    const context = await browser.newContext();
    const page = await open(context);
    const email = newPerson();
    await send(page, email, 0, 20);
    await arrivesExactlyOnce(email, range(0, 20));
    expect((page as Page & { problems?: string[] }).problems).toEqual([]);
    await context.close();
  });

  it('offline, then online: nothing sent while offline, everything once after', async () => {
    const context = await browser.newContext();
    const page = await open(context);
    const email = newPerson();
    await context.setOffline(true);
    await send(page, email, 0, 15);
    // A flush while offline fails in the page: once it ran and the relay is idle, nothing arrived.
    await stack.settled([page]);
    expect(stack.received(email)).toEqual([]);
    await context.setOffline(false);
    await arrivesExactlyOnce(email, range(0, 15));
    await context.close();
  });

  it('reload in the middle of a flush loses and duplicates nothing', async () => {
    const context = await browser.newContext();
    const page = await open(context, { flushInterval: 3_600_000 });
    const email = newPerson();
    await send(page, email, 0, 40);
    await page.evaluate(() => {
      void (window as unknown as { cdp: { flush(): Promise<void> } }).cdp.flush();
      location.reload();
    });
    await page.waitForLoadState('load');
    await page.waitForFunction(() => (window as unknown as { cdp?: { loaded?: boolean } }).cdp?.loaded === true);
    await send(page, undefined, 40, 5);
    await page.evaluate(() => (window as unknown as { cdp: { flush(): Promise<void> } }).cdp.flush());
    await arrivesExactlyOnce(email, range(0, 45));
    await context.close();
  });

  it('closing a tab with queued events: the exit beacon delivers them', async () => {
    const context = await browser.newContext();
    const page = await open(context, { flushInterval: 3_600_000 });
    // The tracker flushes once when it starts (what earlier pages left): let that pass, so only the beacon can send.
    await page.evaluate(() => (window as unknown as { cdp: { flush(): Promise<void> } }).cdp.flush());
    const email = newPerson();
    await send(page, email, 0, 12);
    await sleep(300);
    expect(stack.received(email)).toEqual([]);
    await page.close({ runBeforeUnload: true });
    await arrivesExactlyOnce(email, range(0, 12));
    await context.close();
  });

  it.each([
    ['Web Locks', {}],
    ['no Web Locks (every tab flushes, the relay drops second copies)', { locks: false }],
  ])('two tabs sending at once with %s: each event exactly once', async (_, init) => {
    const context = await browser.newContext();
    const a = await open(context, init);
    const b = await open(context, init);
    const email = newPerson();
    await send(a, email, 0, 1);
    await send(b, email, 1, 0);
    await Promise.all([send(a, undefined, 1, 24), send(b, email, 25, 24)]);
    await arrivesExactlyOnce(email, range(0, 49));
    await context.close();
  });

  it('consent store-only stores without sending; granted sends it all once', async () => {
    const context = await browser.newContext();
    const page = await open(context, { consent: 'store-only' });
    const email = newPerson();
    await send(page, email, 0, 10);
    // Even a flush sends nothing while pending: once it ran and the relay is idle, nothing arrived.
    await stack.settled([page]);
    expect(stack.received(email)).toEqual([]);
    await page.evaluate(() => (window as unknown as { cdp: { consent(c: string): Promise<void> } }).cdp.consent('granted'));
    await arrivesExactlyOnce(email, range(0, 10));
    await context.close();
  });

  it('1,000 held items (anonymous) survive a reload, cost no flush, and drain once after identify', async () => {
    // The emulator keeps at most 50 events per activity per person a day: spread them over 25 activities.
    const HELD = 1000;
    const ACTIVITIES = 25;
    for (let i = 0; i < ACTIVITIES; i++) {
      const created = await fetch(`${stack.emulator.url}/v1/definitions/activity/create`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': PLATFORM_KEY },
        body: JSON.stringify({ name: `held-${i}`, attributes: [{ name: 'n', display_type: 'text' }] }),
      });
      expect([200, 409]).toContain(created.status);
    }
    const context = await browser.newContext();
    let collects = 0;
    context.on('request', (request) => void (request.url().endsWith('/collect') && collects++));
    const init = { maxItems: 2 * HELD };
    const track = (page: Page, from: number, count: number) =>
      page.evaluate(
        async ({ from, count, activities }) => {
          const cdp = (window as unknown as { cdp: Record<string, (...a: unknown[]) => Promise<void>> }).cdp;
          await Promise.all(Array.from({ length: count }, (_, i) => cdp['track']!(`act:cm:held-${(from + i) % activities}`, { 'str:cm:n': String(from + i) })));
        },
        { from, count, activities: ACTIVITIES },
      );
    const page = await open(context, init);
    await track(page, 0, HELD);
    await page.reload();
    await page.waitForFunction(() => (window as unknown as { cdp?: { loaded?: boolean } }).cdp?.loaded === true);
    await track(page, HELD, 50);
    // Held until identify: not one request, even from a flush.
    await stack.settled([page]);
    expect(collects).toBe(0);
    const email = newPerson();
    await page.evaluate((email) => (window as unknown as { cdp: { identify(f: object): Promise<void> } }).cdp.identify({ 'str::email': email }), email);
    const heldValues = () => {
      const person = stack.emulator.emulator.snapshot().people.find((p) => p.fields?.['str::email'] === email);
      return (person?.events ?? []).filter((e) => e.activity_id.startsWith('act:cm:held-')).map((e) => String(e.attributes['str:cm:n']));
    };
    await expect.poll(() => heldValues().length, { timeout: 60_000, interval: 200 }).toBeGreaterThanOrEqual(HELD + 50);
    await stack.settled(openPages());
    expect(heldValues().sort()).toEqual(range(0, HELD + 50).sort());
    // 1,050 items and an identify in batches of at most 100.
    expect(collects).toBeLessThanOrEqual(12);
    await context.close();
  });

  it('loaded twice on one page: one tracker, each event once', async () => {
    const context = await browser.newContext();
    const page = await open(context, {}, { twice: true });
    await page.waitForLoadState('load');
    const email = newPerson();
    await send(page, email, 0, 10);
    await arrivesExactlyOnce(email, range(0, 10));
    expect((page as Page & { problems?: string[] }).problems).toEqual([]);
    await context.close();
  });

  it('the ESM build in an SPA: createTracker, page views on history changes, events once', async () => {
    const context = await browser.newContext();
    const page = await open(context, { spa: true, consent: 'store-only' }, { esm: true });
    const email = newPerson();
    await send(page, email, 0, 5);
    await page.evaluate(() => {
      history.pushState(null, '', '/pricing');
      history.pushState(null, '', '/signup');
      history.back();
    });
    await expect.poll(() => page.evaluate(() => location.pathname)).toBe('/pricing');
    await page.evaluate(() => (window as unknown as { cdp: { consent(c: string): Promise<void> } }).cdp.consent('granted'));
    await arrivesExactlyOnce(email, range(0, 5));
    await expect.poll(() => stack.views(email).sort(), { timeout: 20_000 }).toEqual(['/esm', '/pricing', '/pricing', '/signup']);
    await context.close();
  });

  it('the platform answering 503, then recovering: everything arrives once', async () => {
    const context = await browser.newContext();
    stack.emulator.emulator.setFaults({ '*': { status: 503 } });
    try {
      const page = await open(context);
      const email = newPerson();
      // The relay answers while the platform is down: 503 (items kept by the snippet), or 200 once
      // its outbox holds them (accept, then deliver). Either way nothing reaches the platform yet.
      const answered = page.waitForResponse((r) => r.url().endsWith('/collect') && (r.status() === 503 || r.status() === 200), { timeout: 20_000 });
      await send(page, email, 0, 10);
      await answered;
      expect(stack.received(email)).toEqual([]);
      stack.emulator.emulator.setFaults({});
      await arrivesExactlyOnce(email, range(0, 10));
    } finally {
      stack.emulator.emulator.setFaults({});
      await context.close();
    }
  });
});
