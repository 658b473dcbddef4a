/**
 * Firefox ESR through puppeteer-core over WebDriver BiDi (puppeteer-core 24: version 25 needs a
 * newer Node than the project's floor). Extensions are installed with BiDi's
 * `webExtension.install`, which Firefox accepts unsigned once `xpinstall.signatures.required` is off.
 */
import puppeteer from 'puppeteer-core';
import { type Engine, type EnginePage, scriptedPage, type LaunchOptions } from './types.js';

export const FIREFOX_PATH = process.env['CDP_EDGE_FIREFOX'] ?? '/usr/bin/firefox-esr';

export async function launch(options: LaunchOptions = {}): Promise<Engine> {
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: FIREFOX_PATH,
    headless: true,
    extraPrefsFirefox: { 'xpinstall.signatures.required': false, ...options.prefs },
  });
  try {
    for (const extension of options.extensions ?? []) await browser.installExtension(extension);
  } catch (error) {
    await browser.close();
    throw error;
  }
  return {
    name: 'firefox',
    version: await browser.version(),
    async newPage(): Promise<EnginePage> {
      // A user context is a profile of its own (its own IndexedDB and cache), like a container tab.
      const context = await browser.createBrowserContext();
      const page = await context.newPage();
      return scriptedPage(page, () => context.close());
    },
    close: () => browser.close(),
  };
}
