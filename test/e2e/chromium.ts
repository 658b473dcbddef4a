/**
 * The one way the end-to-end tests get a browser: Debian's Chromium at /usr/bin/chromium,
 * driven by playwright-core. When it is missing, CI (CDP_EDGE_REQUIRE_CHROMIUM=1) fails
 * loudly; anywhere else the suite says "SKIPPED: no Chromium" in capitals, never silently.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { missingBrowser } from './engines/missing.js';

export const CHROMIUM_PATH = process.env['CDP_EDGE_CHROMIUM'] ?? '/usr/bin/chromium';

/** Why Chromium cannot run, when it is not at CHROMIUM_PATH. */
export const chromiumMissing = `no Chromium at ${CHROMIUM_PATH} (install the Debian package "chromium")`;

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
];

/**
 * True when Chromium is there. Throws when it is not and CI requires it; otherwise prints a
 * loud SKIPPED line for `suite` and returns false.
 */
export function chromiumAvailable(suite: string): boolean {
  return existsSync(CHROMIUM_PATH) || missingBrowser(suite, 'Chromium', chromiumMissing, 'CDP_EDGE_REQUIRE_CHROMIUM');
}

/** Launches headless Chromium with the flags this machine's closed network needs. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}
