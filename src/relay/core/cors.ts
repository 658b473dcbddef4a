/**
 * CORS for the browser endpoint: the request's origin is echoed only when some site allows
 * it, always with `Vary: Origin`; never `*`, never credentials (the relay is cookie-free).
 * @module
 */
import type { SiteConfig } from './sites.js';

/** True when `origin` matches one of `patterns` (exact, or `https://*.example.com` for one subdomain level or more). */
export function originAllowed(origin: string, patterns: readonly string[]): boolean {
  for (const pattern of patterns) {
    if (pattern === origin) return true;
    const star = pattern.indexOf('://*.');
    if (star > 0) {
      const scheme = pattern.slice(0, star + 3);
      const suffix = pattern.slice(star + 4); // ".example.com[:port]"
      if (origin.startsWith(scheme) && origin.endsWith(suffix) && origin.length > scheme.length + suffix.length) {
        const host = origin.slice(scheme.length, origin.length - suffix.length);
        if (/^[A-Za-z0-9.-]+$/.test(host)) return true;
      }
    }
  }
  return false;
}

/** True when any site allows `origin` (preflights carry no body, so no key to pick one site). */
export const anySiteAllows = (origin: string, sites: Iterable<SiteConfig>): boolean => {
  for (const site of sites) if (originAllowed(origin, site.origins)) return true;
  return false;
};

/** Headers of an answer to `origin` when allowed. */
export function corsHeaders(origin: string | undefined, allowed: boolean): Record<string, string> {
  const headers: Record<string, string> = { Vary: 'Origin' };
  if (origin !== undefined && allowed) {
    headers['Access-Control-Allow-Origin'] = origin;
    headers['Access-Control-Expose-Headers'] = 'Retry-After';
  }
  return headers;
}

/** Headers of a successful preflight. */
export function preflightHeaders(origin: string): Record<string, string> {
  return {
    ...corsHeaders(origin, true),
    'Access-Control-Allow-Methods': 'POST, OPTIONS',
    'Access-Control-Allow-Headers': 'Content-Type',
    'Access-Control-Max-Age': '86400',
  };
}
