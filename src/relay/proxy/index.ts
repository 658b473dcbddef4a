/**
 * The relay's proxy: every platform endpoint, at the same method and path, behind scoped
 * relay tokens, with bodies validated before they cost an upstream call (the proxy contract, docs/architecture.md).
 * A Hono app built from the endpoint table; runs wherever `fetch` handlers run.
 *
 * @example
 * import { createProxyRoutes } from 'cdp-edge/relay';
 * const proxy = createProxyRoutes({
 *   tokens: parseTokens(env.RELAY_TOKENS),
 *   upstream: { baseUrl: 'https://api.ap3api.com', apiKey: env.CDP_API_KEY },
 * });
 * app.route('/', proxy);
 * @module
 */
import { Hono } from 'hono';
import { ENDPOINT_LIST } from '../../api/index.js';
import { createHandler } from './handler.js';
import { resolveOptions, type ProxyOptions } from './options.js';

export type { ProxyOptions } from './options.js';
export type { AuditEntry } from './audit.js';
export { ProxyError } from './errors.js';
export type { Backoff } from './hold.js';

/** A Hono app serving the 29 endpoints of the table; anything else under `/v1/` is a 404 in the relay's error shape. */
export function createProxyRoutes(options: ProxyOptions): Hono {
  const handle = createHandler(resolveOptions(options));
  const app = new Hono();
  for (const endpoint of ENDPOINT_LIST) app.on(endpoint.method, endpoint.path, (c) => handle(c.req.raw, endpoint));
  app.all('/v1', (c) => handle(c.req.raw));
  app.all('/v1/*', (c) => handle(c.req.raw));
  return app;
}
