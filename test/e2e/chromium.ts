/**
 * The one way the end-to-end tests get a browser: Debian's Chromium at /usr/bin/chromium,
 * driven by playwright-core. When it is missing, CI (CDP_EDGE_REQUIRE_CHROMIUM=1) fails
 * loudly; anywhere else the suite says "SKIPPED: no Chromium" in capitals, never silently.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_PATH = process.env['CDP_EDGE_CHROMIUM'] ?? '/usr/bin/chromium';

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
  if (existsSync(CHROMIUM_PATH)) return true;
  const why = `no Chromium at ${CHROMIUM_PATH} (install the Debian package "chromium")`;
  if (process.env['CDP_EDGE_REQUIRE_CHROMIUM'] === '1') throw new Error(`${suite}: ${why}, and CDP_EDGE_REQUIRE_CHROMIUM=1 requires it`);
  const line = `SKIPPED: no Chromium — ${suite} did not run: ${why}`;
  console.warn(`\n${'!'.repeat(line.length)}\n${line}\n${'!'.repeat(line.length)}\n`);
  return false;
}

/** Launches headless Chromium with the flags this machine's closed network needs. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}
