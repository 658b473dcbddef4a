/**
 * The consent adapters in Chromium, Firefox ESR and WebKitGTK, against stand-ins that follow each
 * platform's published API (test/support/cmp-stubs.ts), through the script-tag build
 * (dist/cdp-consent.js, run in the page's inline script, which its CSP allows by hash, and
 * started by that script's `data-` attributes) and the snippet under `consent: 'pending'`. One
 * page per engine runs the four platforms in turn, loading
 * the site again between them (one profile: IndexedDB is kept): before the choice nothing of the
 * events is in IndexedDB and nothing arrives; the grant stores and sends every event once; the
 * withdrawal stops sending.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type CmpControls, installCmpStubs } from '../support/cmp-stubs.js';
import { availableEngines } from './engines/index.js';
import { type PageGlobals, problems, range, send, useEngine, useStack } from './engines/harness.js';
import type { EnginePage } from './engines/types.js';
import { SITE_KEY } from './snippet-stack.js';

declare const window: PageGlobals & { __cmp: CmpControls };

const engines = availableEngines('consent adapters in three engines (test/e2e/consent-engines.test.ts)');
const stack = useStack();

/** A call on the stubs' controls: the method and its arguments. */
type Choice = [keyof CmpControls, ...unknown[]];

/**
 * Each platform: the `data-` attributes that start its adapter (set on the page's inline script,
 * which the adapters' build reads as `document.currentScript`), the visitor's grant and their withdrawal.
 */
const PLATFORMS: { cmp: string; data: Record<string, string>; grant: Choice; withdraw: Choice }[] = [
  { cmp: 'tcf', data: { cmp: 'tcf', purposes: '8,9' }, grant: ['tcf', [1, 8, 9]], withdraw: ['tcf', []] },
  {
    cmp: 'google',
    data: { cmp: 'google' },
    grant: ['gtag', 'consent', 'update', { analytics_storage: 'granted', ad_user_data: 'granted' }],
    withdraw: ['gtag', 'consent', 'update', { analytics_storage: 'denied' }],
  },
  { cmp: 'onetrust', data: { cmp: 'onetrust', category: 'C0002' }, grant: ['onetrust', ['C0001', 'C0002']], withdraw: ['onetrust', ['C0001']] },
  { cmp: 'cookiebot', data: { cmp: 'cookiebot', category: 'statistics' }, grant: ['cookiebot', ['statistics']], withdraw: ['cookiebot', []] },
];

/** The visitor makes `choice` on the page's consent platform. */
const choose = (page: EnginePage, [method, ...args]: Choice) =>
  page.evaluate(({ method, args }) => void (window.__cmp[method] as (...a: unknown[]) => unknown)(...args), { method, args });

/** The site key's rows in IndexedDB that hold events (not `meta`), without creating the database when there is none. */
const storedEvents = (page: EnginePage) =>
  page.evaluate(async (key) => {
    if (!(await indexedDB.databases()).some((db) => db.name === 'cdp-edge')) return 0;
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const open = indexedDB.open('cdp-edge');
      open.onsuccess = () => resolve(open.result);
      open.onerror = () => reject(open.error);
    });
    if (!db.objectStoreNames.contains('queue')) {
      db.close();
      return 0;
    }
    const keys = await new Promise<IDBValidKey[]>((resolve, reject) => {
      const request = db
        .transaction('queue')
        .objectStore('queue')
        .getAllKeys(IDBKeyRange.bound([key], [key, []]));
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    db.close();
    return keys.filter((row) => (row as string[])[1] !== 'meta').length;
  }, SITE_KEY);

describe.each(engines)('the consent adapters in %s', (name) => {
  const { open, newPerson, arrivesExactlyOnce } = useEngine(name, stack);
  const adapters = readFileSync('dist/cdp-consent.js', 'utf8');

  it('under pending: nothing stored or sent before the choice, everything once after the grant, nothing after the withdrawal', async () => {
    const stubs = `window.__cmp = (${installCmpStubs.toString()})(window);`;
    let page: EnginePage | undefined;
    for (const { cmp, data, grant, withdraw } of PLATFORMS) {
      const init = { consent: 'pending', flushInterval: 100 };
      const script = `${stubs}\nObject.assign(document.currentScript.dataset, ${JSON.stringify(data)});\n${adapters}`;
      if (!page) page = await open(init, { script });
      else await page.goto(stack().pageUrl(init, { script }));
      const email = newPerson();
      await send(page, email, 0, 3);
      await stack().settled([page]);
      expect(await storedEvents(page), `${cmp}: IndexedDB before the choice`).toBe(0);
      expect(stack().received(email), `${cmp}: sent before the choice`).toEqual([]);

      await choose(page, grant);
      await arrivesExactlyOnce(email, range(0, 3));

      await choose(page, withdraw);
      await send(page, undefined, 3, 2);
      await arrivesExactlyOnce(email, range(0, 3));
      expect(await storedEvents(page), `${cmp}: IndexedDB after the withdrawal`).toBe(0);
      expect(await problems(page)).toEqual([]);
    }
  });
});
