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
  goto(url: string, options: { waitUntil: 'load'; timeout: number }): Promise<unknown>;
  reload(options: { waitUntil: 'load'; timeout: number }): Promise<unknown>;
  evaluate(fn: never, arg: never): Promise<unknown>;
}

/** How long a navigation may go without the driver reporting `load` before the page itself is asked. */
export const NAVIGATION_MS = 20_000;

/** What the page says of its own loading: asked when the driver reported no `load` in time. */
interface Loaded {
  href: string;
  readyState: string;
  /** when this document's navigation began (ms since the epoch) */
  began: number;
}

/**
 * `navigate()` (the driver's goto or reload, waiting for `load`), or, when the driver reports no
 * `load` within NAVIGATION_MS, the page's own answer: a document at `url` (any, for a reload) that
 * began after the call and has loaded means the driver missed the event (WebDriver BiDi can lose a
 * navigation's events when another navigation or a failed request overlaps it); that is said on
 * the console and the test goes on, its assertions on what the page then does unchanged. A page
 * that did not load fails with what it shows.
 */
async function navigated(page: ScriptedPage, what: string, url: string | undefined, navigate: () => Promise<unknown>): Promise<void> {
  const began = Date.now();
  try {
    await navigate();
  } catch (error) {
    if ((error as Error).name !== 'TimeoutError') throw error;
    const shown = (await Promise.race([
      page.evaluate((() => ({ href: location.href, readyState: document.readyState, began: performance.timeOrigin })) as never, undefined as never),
      new Promise((resolve) => setTimeout(() => resolve(undefined), 5_000)),
    ]).catch(() => undefined)) as Loaded | undefined;
    const loaded = shown?.readyState === 'complete' && shown.began >= began - 50 && (url === undefined || shown.href === url);
    if (!loaded)
      throw new Error(`${what} did not load within ${NAVIGATION_MS / 1000} s; the page shows ${JSON.stringify(shown ?? 'no answer')}`, { cause: error });
    console.warn(`the driver reported no load for ${what} within ${NAVIGATION_MS / 1000} s, but the page had loaded (${shown.href}): going on`);
  }
}

/** An EnginePage over a playwright-core or puppeteer-core page; `close` ends its profile. */
export const scriptedPage = (page: ScriptedPage, close: () => Promise<void>): EnginePage => ({
  goto: (url) => navigated(page, `going to ${url}`, url, () => page.goto(url, { waitUntil: 'load', timeout: NAVIGATION_MS })),
  reload: () => navigated(page, 'the reload', undefined, () => page.reload({ waitUntil: 'load', timeout: NAVIGATION_MS })),
  evaluate: (fn, arg) => page.evaluate(fn as never, arg as never) as never,
  close,
});
