/**
 * uBlock Origin in Firefox ESR (Debian's webext-ublock-origin-firefox, its bundled EasyList and
 * EasyPrivacy): once the blocker is shown to be active, by a request its lists must block, a
 * first-party relay still serves `cdp.js` and takes `/collect` and the exit beacon — every event
 * arrives once. The same relay under a `track.` host name is blocked, which is why the README
 * tells you to avoid such names. (Chromium no longer loads Manifest V2 extensions such as uBlock
 * Origin, so this runs in Firefox only.)
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { engineAvailable } from './engines/index.js';
import { missingBrowser } from './engines/missing.js';
import { type PageGlobals, range, send, sleep, useEngine, useStack } from './engines/harness.js';

declare const window: PageGlobals;

const SUITE = 'uBlock Origin in Firefox (test/e2e/ublock.test.ts)';
/** Where Debian installs the unpacked extension for Firefox (application id, then the add-on id). */
const UBLOCK_PATH = process.env['CDP_EDGE_UBLOCK'] ?? '/usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}/uBlock0@raymondhill.net';
/** Host names Firefox resolves to loopback for this run: one a blocklist pattern names, one neutral. */
const TRACK_HOST = 'track.example.com';
const NEUTRAL_HOST = 'cdp.example.com';

const available =
  engineAvailable('firefox', SUITE) &&
  (existsSync(UBLOCK_PATH) ||
    missingBrowser(
      SUITE,
      'uBlock Origin',
      `no uBlock Origin at ${UBLOCK_PATH} (install the Debian package "webext-ublock-origin-firefox")`,
      'CDP_EDGE_REQUIRE_UBLOCK',
    ));

/** From a page without a CSP: fetches `url` (no-cors); `blocked` when the browser refused it. */
const probe = (page: { evaluate: <A, R>(fn: (a: A) => R | Promise<R>, a: A) => Promise<R> }, url: string, method = 'GET') =>
  page.evaluate(
    ({ url, method }) =>
      fetch(url, { method, mode: 'no-cors', cache: 'no-store', ...(method === 'POST' ? { body: '{}' } : {}) }).then(
        () => 'reached' as const,
        () => 'blocked' as const,
      ),
    { url, method },
  );

describe.runIf(available)('the snippet with uBlock Origin in Firefox', () => {
  const stack = useStack();
  const { open, newPerson, arrivesExactlyOnce } = useEngine('firefox', stack, {
    extensions: [UBLOCK_PATH],
    prefs: { 'network.dns.localDomains': `${TRACK_HOST},${NEUTRAL_HOST}` },
  });

  /** How many requests for `path` reached the relay (its log has a line per request). */
  const reachedRelay = (path: string) => (stack().relayLog as { path?: string }[]).filter((line) => line.path === path).length;

  it('the blocker is active, yet cdp.js, /collect and the exit beacon on a first-party relay all get through', async () => {
    const page = await open();
    // Proof first: EasyPrivacy blocks a Matomo script on any host. uBlock Origin loads its lists
    // a moment after start, so ask until it refuses, and check the request never reached the relay.
    const matomo = `${stack().relay.url}/matomo.js`;
    let verdict = await probe(page, matomo);
    for (const deadline = Date.now() + 30_000; verdict !== 'blocked' && Date.now() < deadline; verdict = await probe(page, matomo)) await sleep(250);
    expect(verdict, 'uBlock Origin blocks /matomo.js').toBe('blocked');
    const before = reachedRelay('/matomo.js');
    expect(await probe(page, matomo)).toBe('blocked');
    expect(reachedRelay('/matomo.js')).toBe(before);

    // A fresh page load under the active blocker: cdp.js and /collect on the site's own relay.
    await page.goto(stack().pageUrl({ flushInterval: 100 }));
    expect(await page.evaluate(() => window.cdp?.loaded === true, undefined), 'cdp.js loaded').toBe(true);
    const email = newPerson();
    await send(page, email, 0, 5);
    await arrivesExactlyOnce(email, range(0, 5));

    // The exit beacon: tracked right before navigating away.
    await page.evaluate(() => window.cdp.flush(), undefined);
    await page.evaluate(
      () => Promise.all([window.cdp.track('act:cm:e2e', { 'str:cm:n': '5' }), window.cdp.track('act:cm:e2e', { 'str:cm:n': '6' })]),
      undefined,
    );
    await page.goto(`${stack().site}/away`);
    await arrivesExactlyOnce(email, range(0, 7));
    expect(await page.evaluate(() => window.__problems ?? [], undefined)).toEqual([]);
  });

  it('the same relay under a track. host name: its /collect is blocked, under a neutral name it is not', async () => {
    const page = await open();
    await page.goto(`${stack().site}/away`);
    const port = stack().relay.port;
    // Wait for the blocker as above (the page is a fresh profile, the extension the same).
    for (const deadline = Date.now() + 30_000; (await probe(page, `${stack().relay.url}/matomo.js`)) !== 'blocked' && Date.now() < deadline; ) await sleep(250);
    const before = reachedRelay('/collect');
    expect(await probe(page, `http://${NEUTRAL_HOST}:${port}/collect`, 'POST')).toBe('reached');
    expect(reachedRelay('/collect')).toBe(before + 1);
    expect(await probe(page, `http://${TRACK_HOST}:${port}/collect`, 'POST')).toBe('blocked');
    expect(reachedRelay('/collect')).toBe(before + 1);
  });
});
