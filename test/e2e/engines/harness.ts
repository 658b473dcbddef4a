/**
 * What the cross-engine specs share: the stack (relay + emulator + page server, one per test
 * file), a browser of each engine (one per `describe`, a fresh profile per page), and the
 * helpers that drive the snippet in a page and count what reached the emulator.
 */
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { Tracker } from '../../../src/browser/index.js';
import { ACTIVITY, type PageFlags, startStack, type Stack } from '../snippet-stack.js';
import { type Engine, type EngineName, type EnginePage, launch, type LaunchOptions } from './index.js';
import { lateArrival } from './late.js';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => String(from + i));

/** The page's globals as the functions sent into it see them (they run there, not here). */
export interface PageGlobals {
  cdp: Tracker & { loaded?: boolean };
  /** a second tracker a page's `script` made */
  second: Tracker;
  /** the page's uncaught errors, unhandled rejections and console.error calls (snippet-stack.ts) */
  __problems: string[];
}
declare const window: PageGlobals;

/** Starts the stack before the file's tests and stops it after; the getter is valid inside tests. */
export function useStack(): () => Stack {
  let stack: Stack | undefined;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());
  return () => {
    if (!stack) throw new Error('the stack is not running');
    return stack;
  };
}

/**
 * Whether `cdp.js` replaced the stub (`cdp.loaded`): true as soon as it has; false once the page
 * has loaded without it (a page's scripts, `async` and module ones too, hold its load event until
 * they ran or failed), or after 10 s at most.
 */
export const snippetLoaded = (page: EnginePage) =>
  page.evaluate(
    () =>
      new Promise<boolean>((resolve) => {
        const started = Date.now();
        const check = () => {
          if (window.cdp?.loaded) return resolve(true);
          if (document.readyState === 'complete' || Date.now() - started > 10_000) return resolve(false);
          setTimeout(check, 20);
        };
        check();
      }),
    undefined,
  );

/** Who `send` identifies first: an email, or an email with the `user_hash` a verifying relay needs. */
export type Who = string | { email: string; userHash: string } | undefined;

/** identify (when `who`) and track events `from`…`from+count-1` with `window.cdp`; resolves once all are stored. */
export const send = (page: EnginePage, who: Who, from: number, count: number) =>
  page.evaluate(
    async ({ who, from, count, activity }) => {
      if (typeof who === 'string') await window.cdp.identify({ 'str::email': who });
      else if (who) await window.cdp.identify({ 'str::email': who.email }, { user_hash: who.userHash });
      await Promise.all(Array.from({ length: count }, (_, i) => window.cdp.track(activity, { 'str:cm:n': String(from + i) })));
    },
    { who, from, count, activity: ACTIVITY },
  );

/** What went wrong in the page so far (uncaught errors, unhandled rejections, console.error). */
export const problems = (page: EnginePage) => page.evaluate(() => window.__problems, undefined);

export interface EngineHarness {
  readonly engine: Engine;
  /** a unique email for this engine's next person */
  newPerson(): string;
  /** A fresh profile with a page of the stack (`flushInterval` 100 ms unless `init` says otherwise), once the snippet loaded. */
  open(init?: Record<string, unknown>, flags?: PageFlags): Promise<EnginePage>;
  /** Waits until the emulator holds `expected` for `email`, then until nothing more can arrive (Stack.settled): exactly those, once each. */
  arrivesExactlyOnce(email: string, expected: string[]): Promise<void>;
}

/** Call inside a `describe`: launches `name` before its tests, closes each test's pages after it. */
export function useEngine(name: EngineName, stack: () => Stack, options: LaunchOptions = {}): EngineHarness {
  let engine: Engine | undefined;
  let person = 0;
  const pages: EnginePage[] = [];
  beforeAll(async () => {
    engine = await launch(name, options);
    console.info(`e2e engine: ${engine.version}`);
  });
  // A test's pages close after it, passed or failed (WebKitWebDriver runs one session at a time).
  afterEach(async () => {
    await Promise.allSettled(pages.splice(0).map((page) => page.close()));
  });
  afterAll(() => engine?.close());

  const running = () => {
    if (!engine) throw new Error(`${name} is not running`);
    return engine;
  };
  return {
    get engine() {
      return running();
    },
    newPerson: () => `${name}-${++person}-${Date.now()}@example.com`,
    async open(init = {}, flags = {}) {
      const page = await running().newPage();
      pages.push(page);
      await page.goto(stack().pageUrl({ flushInterval: 100, ...init }, flags));
      expect(await snippetLoaded(page), 'the snippet loaded').toBe(true);
      return page;
    },
    async arrivesExactlyOnce(email, expected) {
      try {
        await expect.poll(() => stack().received(email).length, { timeout: 30_000, interval: 100 }).toBeGreaterThanOrEqual(expected.length);
      } catch (error) {
        // Where the events are held, read from the test's output alone (late.ts).
        throw new Error(await lateArrival(stack(), pages, email, expected.length), { cause: error });
      }
      await stack().settled(pages);
      expect(stack().received(email).sort()).toEqual([...expected].sort());
    },
  };
}
