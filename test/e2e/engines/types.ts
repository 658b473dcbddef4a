/**
 * The one small interface the cross-engine end-to-end tests drive a browser through, whatever
 * protocol sits beneath (CDP for Chromium, WebDriver BiDi for Firefox, classic WebDriver for
 * WebKitGTK).
 */

export type EngineName = 'chromium' | 'firefox' | 'webkit';

/** One tab in a fresh profile of its own: its own IndexedDB, cache and cookies. */
export interface EnginePage {
  /** Navigates and resolves once the page's `load` event has fired. */
  goto(url: string): Promise<void>;
  /** Reloads as the visitor would (the browser's own reload), resolving after `load`. */
  reload(): Promise<void>;
  /**
   * Runs `fn(arg)` in the page and resolves with its (awaited, JSON-serialisable) result. `fn`
   * is sent as source text: it may use only its argument and the page's globals.
   */
  evaluate<A, R>(fn: (arg: A) => R | Promise<R>, arg: A): Promise<R>;
  /** Closes the tab and its profile. */
  close(): Promise<void>;
}

export interface LaunchOptions {
  /** Firefox only: unpacked WebExtensions to install into the session (signatures not required). */
  extensions?: string[];
  /** Firefox only: preferences for the session's profile, e.g. `network.dns.localDomains` */
  prefs?: Record<string, string | number | boolean>;
}

/** A running browser of one engine. */
export interface Engine {
  readonly name: EngineName;
  /** e.g. `firefox/153.7.0`, as the browser reports it */
  readonly version: string;
  /** A new tab in a new, empty profile. */
  newPage(): Promise<EnginePage>;
  close(): Promise<void>;
}

/** What playwright-core's and puppeteer-core's pages share, as far as EnginePage uses them. */
export interface ScriptedPage {
  goto(url: string, options: { waitUntil: 'load' }): Promise<unknown>;
  reload(options: { waitUntil: 'load' }): Promise<unknown>;
  evaluate(fn: never, arg: never): Promise<unknown>;
}

/** An EnginePage over a playwright-core or puppeteer-core page; `close` ends its profile. */
export const scriptedPage = (page: ScriptedPage, close: () => Promise<void>): EnginePage => ({
  goto: async (url) => void (await page.goto(url, { waitUntil: 'load' })),
  reload: async () => void (await page.reload({ waitUntil: 'load' })),
  evaluate: (fn, arg) => page.evaluate(fn as never, arg as never) as never,
  close,
});
