/**
 * The script-tag build (dist/cdp-consent.js): `window.cdpConsent` holds the four adapters, and
 * the script's own `data-` attributes start one, e.g.
 * `<script src="/cdp-consent.js" data-cmp="onetrust" data-category="C0004"></script>`
 * (`data-cmp`: tcf, google, onetrust or cookiebot; `data-purposes="8,9"` and `data-vendor` for TCF).
 * @module
 */
import { followCookiebot } from './cookiebot.js';
import { followGoogle } from './google.js';
import { followOneTrust } from './onetrust.js';
import { followTcf } from './tcf.js';

const adapters = { tcf: followTcf, google: followGoogle, onetrust: followOneTrust, cookiebot: followCookiebot };
(window as unknown as { cdpConsent: typeof adapters }).cdpConsent = adapters;
const data = (document.currentScript as HTMLScriptElement | null)?.dataset;
const start = adapters[data?.['cmp'] as keyof typeof adapters];
if (start) {
  const numbers = (list?: string) => list?.split(',').map(Number);
  start({
    category: data?.['category'] as never,
    purposes: numbers(data?.['purposes']),
    vendor: numbers(data?.['vendor'])?.[0],
  });
}
