/**
 * The three browser engines the end-to-end tests run in, behind one small interface
 * (types.ts): Chromium (playwright-core, CDP), Firefox ESR (puppeteer-core, WebDriver BiDi) and
 * WebKitGTK (WebKitWebDriver, classic WebDriver, under Xvfb). All are Debian packages.
 *
 * A missing engine fails the suite when CI requires it (`CDP_EDGE_REQUIRE_CHROMIUM=1`,
 * `CDP_EDGE_REQUIRE_FIREFOX=1`, `CDP_EDGE_REQUIRE_WEBKIT=1`); anywhere else the suite prints a
 * SKIPPED line in capitals and runs without it, never silently.
 */
import { existsSync } from 'node:fs';
import { CHROMIUM_PATH, chromiumMissing } from '../chromium.js';
import { launch as launchChromium } from './chromium.js';
import { FIREFOX_PATH, launch as launchFirefox } from './firefox.js';
import { missingBrowser } from './missing.js';
import type { Engine, EngineName, LaunchOptions } from './types.js';
import { launch as launchWebKit, miniBrowserPath, WEBKIT_DRIVER_PATH, XVFB_PATH } from './webkit.js';

export type { Engine, EngineName, EnginePage, LaunchOptions } from './types.js';

interface Presence {
  /** the variable that makes the engine required */
  require: string;
  /** why it cannot run here, or undefined when it can */
  missing(): string | undefined;
}

const PRESENCE: Record<EngineName, Presence> = {
  chromium: {
    require: 'CDP_EDGE_REQUIRE_CHROMIUM',
    missing: () => (existsSync(CHROMIUM_PATH) ? undefined : chromiumMissing),
  },
  firefox: {
    require: 'CDP_EDGE_REQUIRE_FIREFOX',
    missing: () => (existsSync(FIREFOX_PATH) ? undefined : `no Firefox at ${FIREFOX_PATH} (install the Debian package "firefox-esr")`),
  },
  webkit: {
    require: 'CDP_EDGE_REQUIRE_WEBKIT',
    missing: () => {
      if (!existsSync(WEBKIT_DRIVER_PATH)) return `no WebKitWebDriver at ${WEBKIT_DRIVER_PATH} (install the Debian package "webkit2gtk-driver")`;
      if (!miniBrowserPath()) return 'no MiniBrowser next to libwebkit2gtk (install the Debian package "webkit2gtk-driver")';
      if (!existsSync(XVFB_PATH)) return `no Xvfb at ${XVFB_PATH} (install the Debian package "xvfb")`;
      return undefined;
    },
  },
};

/** Every engine the suites run in, in the order they run. */
export const ENGINES: readonly EngineName[] = ['chromium', 'firefox', 'webkit'];

/**
 * True when `engine` can run here. Throws when it cannot and its REQUIRE variable is `1`;
 * otherwise prints a loud SKIPPED line naming `suite` and returns false.
 */
export function engineAvailable(engine: EngineName, suite: string): boolean {
  const { require, missing } = PRESENCE[engine];
  const why = missing();
  return why === undefined || missingBrowser(suite, engine, why, require);
}

/** The engines of ENGINES that can run here (see engineAvailable), for `describe.each`. */
export const availableEngines = (suite: string): EngineName[] => ENGINES.filter((engine) => engineAvailable(engine, suite));

/** Launches `engine`; `extensions` and `prefs` are for Firefox only. */
export function launch(engine: EngineName, options: LaunchOptions = {}): Promise<Engine> {
  if ((options.extensions?.length || options.prefs) && engine !== 'firefox') throw new Error(`launch(${engine}): extensions and prefs are for Firefox only`);
  if (engine === 'chromium') return launchChromium();
  if (engine === 'firefox') return launchFirefox(options);
  return launchWebKit();
}
