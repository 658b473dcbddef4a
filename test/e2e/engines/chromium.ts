/** Chromium through playwright-core (the Chrome DevTools Protocol): Debian's /usr/bin/chromium. */
import { launchChromium } from '../chromium.js';
import type { Engine, EnginePage } from './types.js';

export async function launch(): Promise<Engine> {
  const browser = await launchChromium();
  return {
    name: 'chromium',
    version: `chromium/${browser.version()}`,
    async newPage(): Promise<EnginePage> {
      // A context is a profile of its own: nothing stored by an earlier test is seen.
      const context = await browser.newContext();
      const page = await context.newPage();
      return {
        goto: async (url) => void (await page.goto(url, { waitUntil: 'load' })),
        reload: async () => void (await page.reload({ waitUntil: 'load' })),
        evaluate: (fn, arg) => page.evaluate(fn as never, arg) as never,
        close: () => context.close(),
      };
    },
    close: () => browser.close(),
  };
}
