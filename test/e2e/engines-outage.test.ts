/**
 * The relay down while a visitor goes on browsing the site, in Chromium, Firefox ESR and
 * WebKitGTK. The outage is made at the relay (stopped, then started on the same address), which
 * behaves the same for every engine.
 *
 * - Moving to another page of the site: that page gets `cdp.js` from the browser's cache, at the
 *   versioned address and at plain `/cdp.js` alike, and what was stored meanwhile arrives once
 *   the relay is back, each event once.
 * - Reloading: WebKitGTK asks the relay for `cdp.js` again on a reload (even at the versioned,
 *   immutable address) and, with the relay down, the reloaded page has no snippet, while
 *   Chromium and Firefox use their copy. What was stored before the reload is kept either way and
 *   arrives from the next page that loads the snippet.
 */
import { describe, expect, it } from 'vitest';
import { availableEngines } from './engines/index.js';
import { problems, range, send, sleep, snippetLoaded, useEngine, useStack } from './engines/harness.js';

const engines = availableEngines('three-engine end-to-end, relay outage (test/e2e/engines-outage.test.ts)');
const stack = useStack();

describe.each(engines)('the snippet through a relay outage in %s', (name) => {
  const { open, newPerson, arrivesExactlyOnce } = useEngine(name, stack);

  /** A page whose person's first 5 events arrived, then the relay stopped: the caller starts it again. */
  const pageThenOutage = async (versioned: boolean) => {
    const page = await open({}, { versioned });
    const email = newPerson();
    await send(page, email, 0, 5);
    await arrivesExactlyOnce(email, range(0, 5));
    await stack().stopRelay();
    return { page, email };
  };

  it.each([
    ['the versioned address', true],
    ['plain /cdp.js', false],
  ])(
    'the relay down, the visitor moves to another page: that page has cdp.js (from %s, cached), and what was stored meanwhile arrives once the relay is back',
    async (_, versioned) => {
      const { page, email } = await pageThenOutage(versioned);
      try {
        await send(page, undefined, 5, 5);
        // Another page of the site, in the same tab: the browser's cache is all there is to load cdp.js from.
        await page.goto(stack().pageUrl({ flushInterval: 100 }, { versioned, page: 'next' }));
        expect(await snippetLoaded(page), 'the next page loaded cdp.js from cache while the relay is down').toBe(true);
        await send(page, undefined, 10, 5);
        await sleep(500);
        expect(stack().received(email).sort()).toEqual(range(0, 5).sort());
      } finally {
        await stack().startRelay();
      }
      await arrivesExactlyOnce(email, range(0, 15));
      expect(await problems(page)).toEqual([]);
    },
  );

  it('the relay down, the page reloaded: what was stored before is kept and arrives once a page has the snippet again', async () => {
    const { page, email } = await pageThenOutage(true);
    try {
      await send(page, undefined, 5, 5);
      await page.reload();
      // WebKitGTK revalidates cdp.js on reload, which fails: no snippet there; Chromium and Firefox use the cache.
      expect(await snippetLoaded(page)).toBe(name !== 'webkit');
    } finally {
      await stack().startRelay();
    }
    await page.goto(stack().pageUrl({ flushInterval: 100 }, { versioned: true, page: 'after' }));
    await arrivesExactlyOnce(email, range(0, 10));
    expect(await problems(page)).toEqual([]);
  });
});
