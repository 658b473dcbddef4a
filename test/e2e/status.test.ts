/**
 * The relay's status page in real Chromium: after real traffic through a real relay and emulator,
 * the page lists the rejected items with their reasons, its items chart is drawn (read back from a
 * screenshot: the chart's blue line rises, so the page is not blank and not flat), and it reloads
 * itself with newer figures.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { silentLogger } from '../../src/relay/core/logging.js';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';
import { chromiumAvailable, launchChromium } from './chromium.js';

const available = chromiumAvailable('status page (test/e2e/status.test.ts)');
const KEY = 'status-platform-key';
const ORIGIN = 'https://shop.example.com';

/** Pixels of the screenshot close to `rgb`, and the vertical span they cover, read back with a canvas in the browser. */
async function pixelsOf(page: Page, png: Buffer, rgb: [number, number, number]) {
  return page.evaluate(
    async ({ data, rgb }) => {
      const image = new Image();
      image.src = `data:image/png;base64,${data}`;
      await image.decode();
      const canvas = document.createElement('canvas');
      canvas.width = image.width;
      canvas.height = image.height;
      const context = canvas.getContext('2d')!;
      context.drawImage(image, 0, 0);
      const { data: pixels } = context.getImageData(0, 0, image.width, image.height);
      let matching = 0;
      let white = 0;
      let top = Number.POSITIVE_INFINITY;
      let bottom = -1;
      for (let i = 0; i < pixels.length; i += 4) {
        const [r, g, b] = [pixels[i]!, pixels[i + 1]!, pixels[i + 2]!];
        if (r > 250 && g > 250 && b > 250) white++;
        if (Math.abs(r - rgb[0]) + Math.abs(g - rgb[1]) + Math.abs(b - rgb[2]) < 60) {
          matching++;
          const y = Math.floor(i / 4 / image.width);
          top = Math.min(top, y);
          bottom = Math.max(bottom, y);
        }
      }
      return { matching, span: bottom - top, whiteShare: white / (pixels.length / 4) };
    },
    { data: png.toString('base64'), rgb },
  );
}

describe.runIf(available)('the status page in Chromium', () => {
  let emulator: RunningEmulator;
  let relay: RunningRelay;
  let browser: Browser;

  beforeAll(async () => {
    emulator = await startEmulator({ port: 0, key: KEY });
    relay = await startRelay({
      port: 0,
      metricsPort: 0,
      logger: silentLogger,
      env: {
        CDP_API_KEY: KEY,
        CDP_BASE_URL: emulator.url,
        RELAY_SITES: JSON.stringify([
          { key: 'pk_status', name: 'status-shop', origins: [ORIGIN], verify: 'open', visitor_rate_limit: { per_second: 1000, burst: 1000 } },
        ]),
      },
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await relay?.close();
    await emulator?.close();
  });

  const send = async (batch: unknown[]) => {
    const response = await fetch(`${relay.url}/collect`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain' },
      body: JSON.stringify({ key: 'pk_status', batch }),
    });
    expect(response.status).toBe(200);
  };
  const person = (i: number) => ({ id: crypto.randomUUID(), type: 'identify', fields: { 'str::email': `status-${i}@example.com` } });

  it('lists rejected items with reasons, draws the traffic, and reloads itself with newer figures', async () => {
    for (let i = 0; i < 20; i++) await send([person(i), person(100 + i), { id: `bad-${i}`, type: 'track' }]);
    const page = await browser.newPage({ viewport: { width: 900, height: 700 } });
    await page.goto(`${relay.metricsUrl}/status`);
    expect(await page.title()).toBe('cdp-edge relay status');
    const rows = page.locator('tbody tr');
    expect(await rows.count()).toBe(20);
    expect(await rows.first().locator('td').nth(2).innerText()).toBe('bad-19');
    expect(await rows.first().locator('td').nth(3).innerText()).toBe('invalid');
    expect(await page.locator('figcaption').first().innerText()).toMatch(/^Items: [\d.]+\/s now, peak [\d.]+\/s$/);

    const shot = await page.screenshot({ fullPage: true });
    // Read back in a blank page: the status page reloads itself every 5 s, which cuts off a script
    // running there (a screenshot done 4.99 s after the load made it "Execution context was destroyed").
    const reader = await browser.newPage();
    const blue = await pixelsOf(reader, shot, [0x1f, 0x6f, 0xeb]);
    await reader.close();
    // A blank page would be white; a flat line would span a pixel or two.
    expect(blue.whiteShare).toBeLessThan(0.97);
    expect(blue.matching).toBeGreaterThan(200);
    expect(blue.span).toBeGreaterThan(40);

    const before = await page.locator('body > p').first().innerText();
    expect(before).toContain('60 items');
    await send([person(1000), person(1001), person(1002)]);
    // The page reloads every 5 s on its own: a later load shows the newer figures. (Waiting for the
    // next load event instead raced it: a reload requested before the send counted, done after, read 60.)
    await expect.poll(() => page.locator('body > p').first().innerText(), { timeout: 15_000 }).toContain('63 items');
    await page.close();
  });
});
