/**
 * Page views: what `page()` sends (with campaign attribution), and the history hooks of SPA mode.
 * @module
 */
import type { AttributionKey, Fields } from './types.js';

/** Campaign parameters and click ids read from the page's address. */
const CAMPAIGN_KEYS = 'utm_source utm_medium utm_campaign utm_term utm_content gclid fbclid msclkid ttclid li_fat_id'.split(' ') as AttributionKey[];

const MAX_VALUE_CHARS = 255;

/**
 * Where a visit came from: the campaign parameters and click ids of `href`, and `referrer` when
 * it is another site (moving between one's own pages is no touch). Empty for a direct visit.
 * @example attribution('https://shop.example/?utm_source=news&gclid=x', '') // { utm_source: 'news', gclid: 'x' }
 */
export function attribution(href: string, referrer: string): Partial<Record<AttributionKey, string>> {
  const found: Partial<Record<AttributionKey, string>> = {};
  const page = new URL(href);
  for (const key of CAMPAIGN_KEYS) {
    const value = page.searchParams.get(key);
    if (value) found[key] = value.slice(0, MAX_VALUE_CHARS);
  }
  try {
    if (referrer && new URL(referrer).host !== page.host) found.referrer = referrer.slice(0, MAX_VALUE_CHARS);
  } catch {}
  return found;
}

/** URL, path, title, referrer and campaign attribution of the current page as activity attributes. */
export function pageAttributes(touch: Partial<Record<AttributionKey, string>>): Fields {
  const attributes: Fields = {};
  const put = (name: string, value: string | undefined) => {
    if (value) attributes[`str:cm:${name}`] = value.slice(0, MAX_VALUE_CHARS);
  };
  put('url', location.href);
  put('path', location.pathname);
  put('title', document.title);
  put('referrer', document.referrer);
  for (const key of CAMPAIGN_KEYS) put(key, touch[key]);
  return attributes;
}

/** Calls `onChange` now and after every `pushState`/`replaceState`/`popstate` that changes the URL. */
export function watchHistory(onChange: () => void): void {
  let last = '';
  const check = () => {
    if (last === location.href) return;
    last = location.href;
    onChange();
  };
  for (const method of ['pushState', 'replaceState'] as const) {
    const original = history[method];
    history[method] = (...args: Parameters<History['pushState']>) => {
      original.apply(history, args);
      check();
    };
  }
  addEventListener('popstate', check);
  check();
}

/**
 * Calls `online` when the browser is back online, `hidden` when the page is hidden or left, and
 * `shown` when it shows again. Outside a page (no `addEventListener`), nothing.
 */
export function watchPage(online: () => void, hidden: () => void, shown: () => void): void {
  if (typeof addEventListener !== 'function') return;
  addEventListener('online', online);
  addEventListener('pagehide', hidden);
  document.addEventListener('visibilitychange', () => (document.visibilityState === 'hidden' ? hidden() : shown()));
}
