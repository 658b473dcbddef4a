/** Chromium through playwright-core (the Chrome DevTools Protocol): Debian's /usr/bin/chromium. */
import { launchChromium } from '../chromium.js';
import { type Engine, type EnginePage, scriptedPage } from './types.js';

export async function launch(): Promise<Engine> {
  const browser = await launchChromium();
  return {
    name: 'chromium',
    version: `chromium/${browser.version()}`,
    async newPage(): Promise<EnginePage> {
      // A context is a profile of its own: nothing stored by an earlier test is seen.
      const context = await browser.newContext();
      const page = await context.newPage();
      return scriptedPage(page, () => context.close());
    },
    close: () => browser.close(),
  };
}
