/**
 * Page views: what `page()` sends, and the history hooks of SPA mode.
 * @module
 */
import type { Fields } from './types.js';

/** URL, path, title and referrer of the current page as activity attributes. */
export function pageAttributes(): Fields {
  const a: Fields = {};
  const put = (k: string, v: string) => v && (a['str:cm:' + k] = v.slice(0, 255));
  put('url', location.href);
  put('path', location.pathname);
  put('title', document.title);
  put('referrer', document.referrer);
  return a;
}

/** Calls `fn` after every `pushState`/`replaceState`/`popstate` that changes the URL. */
export function watchHistory(fn: () => void): void {
  let last = location.href;
  const check = () => last != location.href && ((last = location.href), fn());
  for (const m of ['pushState', 'replaceState'] as const) {
    const orig = history[m];
    history[m] = function (this: History, ...args: Parameters<History['pushState']>) {
      orig.apply(this, args);
      check();
    };
  }
  addEventListener('popstate', check);
}
