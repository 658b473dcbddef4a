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
import { ENDPOINT_LIST, findEndpoint } from '../../api/index.js';
import { toResponse, type HttpAnswer } from '../core/errors.js';
import { createHandler, fromRequest, type ProxyRequest } from './handler.js';
import { resolveOptions, type ProxyOptions } from './options.js';

export type { ProxyOptions } from './options.js';
export type { AuditEntry } from '../core/observe.js';
export type { Backoff } from '../deliver/caller.js';
export type { ProxyRequest } from './handler.js';

export interface Proxy {
  /** the routes as a Hono app, for every runtime */
  app: Hono;
  /** one call under `/v1` answered without a `Request` or `Response` (the Node entry's front) */
  call(request: ProxyRequest): Promise<HttpAnswer>;
}

/** The proxy: a Hono app serving the 29 endpoints of the table, and the same handler for a runtime's own front. */
export function createProxy(options: ProxyOptions): Proxy {
  const handle = createHandler(resolveOptions(options));
  const app = new Hono();
  for (const endpoint of ENDPOINT_LIST) app.on(endpoint.method, endpoint.path, async (c) => toResponse(await handle(fromRequest(c.req.raw), endpoint)));
  app.all('/v1', async (c) => toResponse(await handle(fromRequest(c.req.raw))));
  app.all('/v1/*', async (c) => toResponse(await handle(fromRequest(c.req.raw))));
  return { app, call: (request) => handle(request, findEndpoint(request.method, request.path)) };
}

/** A Hono app serving the 29 endpoints of the table; anything else under `/v1/` is a 404 in the relay's error shape. */
export function createProxyRoutes(options: ProxyOptions): Hono {
  return createProxy(options).app;
}
