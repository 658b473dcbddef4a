import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, launchChromium } from '../e2e/chromium.js';
import { useEmulator } from './helpers.js';

// Fails in CI (CDP_EDGE_REQUIRE_CHROMIUM=1) when Chromium is missing; elsewhere says SKIPPED loudly.
const available = chromiumAvailable('emulator dashboard (test/emulator/dashboard.test.ts)');

const h = useEmulator();

describe.runIf(available)('dashboard in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('renders people, tags and events, runs no injected markup, and shows new clicks after refreshing', async () => {
    await h.client.definitions.createActivity({ name: 'Clicked' });
    await h.client.person.merge({
      people: [{ fields: { 'str::email': 'shown@example.com', 'str::first': '<img src=x onerror="window.__pwned=1">' }, tags: ['demo'] }],
    });
    const page = await browser.newPage();
    try {
      await page.goto(`${h.running.url}/`);
      expect(await page.title()).toBe('cdp-edge emulator');
      await expect.poll(() => page.locator('td', { hasText: 'shown@example.com' }).count()).toBe(1);
      expect(await page.locator('td', { hasText: '<img src=x' }).count()).toBe(1);
      expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
      const shot = await page.screenshot({ fullPage: true });
      expect(shot.subarray(1, 4).toString()).toBe('PNG');
      await h.client.activities.create({ activities: [{ activity_id: 'act:cm:clicked', fields: { 'str::email': 'late@example.com' } }] });
      await expect.poll(() => page.locator('td', { hasText: 'act:cm:clicked' }).count(), { timeout: 8_000, interval: 250 }).toBeGreaterThan(1);
      await expect.poll(() => page.locator('td', { hasText: 'late@example.com' }).count(), { timeout: 8_000 }).toBe(1);
    } finally {
      await page.close();
    }
  }, 30_000);
});
