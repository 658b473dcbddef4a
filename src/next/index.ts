/**
 * cdp-edge for Next.js, in `next.config`: `withCdpEdge` serves the relay's browser endpoint and
 * script under the site's own origin (`/t/collect`, `/t/cdp.js`) through Next's rewrites, so the
 * tracker is first party with no CORS and no third-party host for blocklists to know. Nothing
 * here runs in the browser; the server's `user_hash` is `cdp-edge/next/server`.
 *
 * @example
 * // next.config.mjs
 * import { withCdpEdge } from 'cdp-edge/next';
 * export default withCdpEdge({}, { relay: process.env.CDP_EDGE_RELAY });
 * @module
 */

/** One rewrite of Next's `rewrites()`. */
export interface Rewrite {
  source: string;
  destination: string;
}

/** What `rewrites()` of a Next config may return. */
export type Rewrites = Rewrite[] | { beforeFiles?: Rewrite[]; afterFiles?: Rewrite[]; fallback?: Rewrite[] };

/** The grouped form of `rewrites()`, which `withCdpEdge` returns. */
export interface RewriteGroups {
  beforeFiles: Rewrite[];
  afterFiles?: Rewrite[];
  fallback?: Rewrite[];
}

/** The part of a Next config this touches; every other key passes through unchanged. */
export interface NextConfigLike {
  rewrites?: () => Rewrites | Promise<Rewrites>;
  [key: string]: unknown;
}

export interface CdpEdgeOptions {
  /** The relay's base address as the Next server reaches it, e.g. `https://relay.internal:8787`. */
  relay: string;
  /** Where the site serves the relay's paths. @default '/t' */
  path?: string;
  /** The relay's browser endpoint (its `RELAY_COLLECT_PATH`). @default '/collect' */
  collectPath?: string;
  /** The relay's script path (its `RELAY_SCRIPT_PATH`). @default '/cdp.js' */
  scriptPath?: string;
}

/** The rewrites `withCdpEdge` adds: `<path>/collect` and `<path>/cdp.js` to the relay (a query string goes along). */
export function cdpEdgeRewrites(options: CdpEdgeOptions): Rewrite[] {
  let relay: URL;
  try {
    relay = new URL(options.relay);
  } catch {
    throw new TypeError(`withCdpEdge: relay must be an absolute http(s) address, got ${JSON.stringify(options.relay)}`);
  }
  if (relay.protocol !== 'http:' && relay.protocol !== 'https:') throw new TypeError('withCdpEdge: relay must be an http(s) address');
  const path = `/${(options.path ?? '/t').replace(/^\/+|\/+$/g, '')}`;
  if (path === '/') throw new TypeError('withCdpEdge: path must name a folder of the site, such as "/t"');
  const base = relay.href.replace(/\/$/, '');
  return [
    { source: `${path}/collect`, destination: base + (options.collectPath ?? '/collect') },
    { source: `${path}/cdp.js`, destination: base + (options.scriptPath ?? '/cdp.js') },
  ];
}

/**
 * `nextConfig` with the relay's two paths served under the site's origin, ahead of the app's own
 * routes and files (`beforeFiles`). The config's own rewrites are kept. In the page, the tracker's
 * `relay` is then the path: `<CdpProvider relay="/t" …>`, or `cdp('init', { relay: '/t', … })`.
 *
 * The visitor's address: Next passes the request's `X-Forwarded-For` to the relay as it came and
 * adds none, so the relay sees the Next server as the client. Behind a proxy that sets the header
 * (a load balancer, nginx with `$proxy_add_x_forwarded_for`, a hosting platform's edge), set the
 * relay's `RELAY_TRUST_PROXY` to the address it sees the Next server come from: it then takes
 * the visitor's address from the header. A Next server that visitors reach directly cannot vouch
 * for the header (any visitor can write one), so leave it untrusted there.
 */
export function withCdpEdge<C extends NextConfigLike>(nextConfig: C, options: CdpEdgeOptions): Omit<C, 'rewrites'> & { rewrites(): Promise<RewriteGroups> } {
  const ours = cdpEdgeRewrites(options);
  return {
    ...nextConfig,
    async rewrites() {
      const theirs = (await nextConfig.rewrites?.()) ?? [];
      if (Array.isArray(theirs)) return { beforeFiles: ours, afterFiles: theirs, fallback: [] };
      return { ...theirs, beforeFiles: [...ours, ...(theirs.beforeFiles ?? [])] };
    },
  };
}
