/**
 * The relay: one runtime-neutral Hono app. `POST /collect` for browsers (the /collect contract, docs/architecture.md), the
 * `/v1/...` proxy for servers (the proxy contract, docs/architecture.md), `GET /cdp.js` (+ an alias) and `GET /healthz`.
 * The runtime entries (`node.ts`, `cloudflare.ts`) only add the connection's address and state.
 *
 * @example
 * const relay = createRelay(parseConfig(env), { store: createMemoryStore() });
 * export default { fetch: relay.fetch };
 * @module
 */
import { Hono, type Context } from 'hono';
import { relayError } from '../api/index.js';
import { createClient } from '../client/index.js';
import type { RelayConfig } from './config.js';
import { anySiteAllows, corsHeaders, preflightHeaders } from './cors.js';
import { collect, type CollectOutcome, type Enqueue } from './collect/handler.js';
import type { ClientInfo } from './collect/enrich.js';
import { sharedBackoff, systemClock, type Backoff, type Clock } from './collect/upstream.js';
import { RelayHttpError } from './errors.js';
import { consoleLogger, silentLogger, type Logger } from './logging.js';
import { createMemoryLimiter, type RateLimiter } from './limits.js';
import { createMemoryStore } from './memory.js';
import { createProxyRoutes } from './proxy/index.js';
import { createSnippetHandler, type SnippetSource } from './snippet.js';
import type { RelayStore } from './store.js';

/** Everything that touches the outside world, injected; each has a default. */
export interface RelayDeps {
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** @default the system clock */
  clock?: Clock;
  /** dedupe ids and counters @default an in-memory store (forgets on restart) */
  store?: RelayStore;
  /** per-visitor and site-wide request limits @default buckets in this process or isolate */
  limiter?: RateLimiter;
  /** @default one JSON line per request on stdout */
  logger?: Logger;
  /** the built snippet (dist/cdp.js): bytes, text, or a loader @default none (404) */
  snippet?: SnippetSource;
  /** the connection's address and geolocation, read by the runtime entry @default nothing known */
  clientInfo?: (c: Context) => ClientInfo | Promise<ClientInfo>;
  /** jitter source @default Math.random */
  random?: () => number;
  /** the upstream's 429 backoff @default one per upstream base URL in this process/isolate */
  backoff?: Backoff;
  /** hands accepted entries to a queue instead of the platform (Workers Queues) */
  enqueue?: Enqueue;
}

const NO_STORE = 'no-store';

/** Creates the relay's Hono app; `app.fetch` is the handler for every runtime. */
export function createRelay(config: RelayConfig, deps: RelayDeps = {}): Hono {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? (config.log ? consoleLogger : silentLogger);
  const store = deps.store ?? createMemoryStore();
  const limiter = deps.limiter ?? createMemoryLimiter();
  const fetchImpl = deps.fetch ?? globalThis.fetch.bind(globalThis);
  const client = createClient({
    apiKey: config.apiKey,
    baseUrl: config.baseUrl,
    fetch: fetchImpl,
    retry: false,
    validate: false,
    timeout: Math.max(500, Math.min(5_000, config.budgetMs)),
  });
  // One 429 window per upstream, shared by /collect and the proxy: the platform limits the key, not the route.
  const backoff = deps.backoff ?? sharedBackoff(config.baseUrl);
  const context = {
    config,
    store,
    limiter,
    clock,
    client,
    backoff,
    random: deps.random ?? Math.random,
    enqueue: deps.enqueue,
  };
  const sites = [...config.sites.values()];
  const app = new Hono();

  const known = new Set([...config.scriptPaths, '/healthz', config.collectPath]);
  app.use('*', async (c, next) => {
    const started = clock.now();
    await next();
    if (!c.res.headers.has('Cache-Control')) c.res.headers.set('Cache-Control', NO_STORE);
    // POST /collect logs its own richer line and the proxy its audit line; every other answer gets
    // a short one. Unknown paths are logged as "*": a path may carry anything.
    const pathname = new URL(c.req.url).pathname;
    if (pathname.startsWith('/v1/') || pathname === '/v1' || (c.req.method === 'POST' && pathname === config.collectPath)) return;
    logger({
      ts: new Date(started).toISOString(),
      kind: 'http',
      method: c.req.method,
      path: known.has(pathname) ? pathname : '*',
      status: c.res.status,
      ms: clock.now() - started,
    });
  });

  const path = config.collectPath;
  app.options(path, (c) => {
    const origin = c.req.header('origin');
    if (origin !== undefined && anySiteAllows(origin, sites)) return c.body(null, 204, preflightHeaders(origin));
    return c.json(
      relayError('origin_not_allowed', 'This origin may not send to the relay; add it to a site\'s "origins" in RELAY_SITES.'),
      403,
      corsHeaders(origin, false),
    );
  });

  app.post(path, async (c) => {
    const started = clock.now();
    const origin = c.req.header('origin');
    const cors = corsHeaders(origin, origin !== undefined && anySiteAllows(origin, sites));
    let outcome: CollectOutcome;
    try {
      outcome = await collect(context, c.req.raw, await (deps.clientInfo?.(c) ?? {}));
    } catch (caught) {
      // Anything unexpected (the state store unreachable, say) happened before an item was final:
      // 503 + Retry-After keeps every item in the browser.
      const error =
        caught instanceof RelayHttpError
          ? caught
          : new RelayHttpError(
              503,
              'relay_unavailable',
              'The relay could not handle the batch right now; nothing was lost: retry after the Retry-After seconds.',
              { retryAfter: 5, cause: caught },
            );
      outcome = { status: error.status, body: error.body, ...(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter }) };
      if (!(caught instanceof RelayHttpError)) outcome.warning = caught instanceof Error ? caught.name : 'error';
    }
    const headers: Record<string, string> = { ...cors, 'Cache-Control': NO_STORE };
    if (outcome.retryAfter !== undefined) headers['Retry-After'] = String(outcome.retryAfter);
    const counts: Record<string, number> = {};
    for (const result of outcome.results ?? []) counts[result.status] = (counts[result.status] ?? 0) + 1;
    const error = outcome.status === 200 ? undefined : (outcome.body as { error?: { code?: string } }).error?.code;
    logger({
      ts: new Date(started).toISOString(),
      kind: 'collect',
      method: 'POST',
      path,
      status: outcome.status,
      ms: clock.now() - started,
      ...(outcome.site === undefined ? {} : { site: outcome.site, items: outcome.items ?? 0, results: counts, upstream: outcome.upstream ?? [] }),
      ...(error === undefined ? {} : { error }),
      ...(outcome.warning === undefined ? {} : { warning: outcome.warning }),
    });
    return c.json(outcome.body as object, outcome.status as 200, headers);
  });

  app.all(path, (c) =>
    c.json(relayError('method_not_allowed', `${c.req.method} is not served here; send POST with the batch as the body.`), 405, { Allow: 'POST, OPTIONS' }),
  );

  const snippet = createSnippetHandler(deps.snippet);
  for (const scriptPath of config.scriptPaths) app.get(scriptPath, (c) => snippet(c.req.raw));

  app.get('/healthz', (c) => c.json({ ok: true }));

  app.route(
    '/',
    createProxyRoutes({
      tokens: config.tokens,
      upstream: { baseUrl: config.baseUrl, apiKey: config.apiKey },
      fetch: fetchImpl,
      logger: (entry) => logger(entry),
      now: () => clock.now(),
      sleep: (ms) => clock.sleep(ms),
      backoff,
    }),
  );

  app.notFound((c) =>
    c.json(
      relayError(
        'not_found',
        `Nothing is served at ${c.req.method} ${new URL(c.req.url).pathname}; the relay serves POST ${path}, GET /cdp.js, GET /healthz and the /v1/ proxy.`,
      ),
      404,
    ),
  );

  app.onError((error, c) => {
    const pathname = new URL(c.req.url).pathname;
    logger({
      ts: new Date(clock.now()).toISOString(),
      kind: 'error',
      method: c.req.method,
      path: known.has(pathname) ? pathname : '*',
      status: 500,
      ms: 0,
      error: error.name,
    });
    return c.json(relayError('internal_error', 'The relay failed unexpectedly; nothing was lost, retry later.'), 500, { 'Cache-Control': NO_STORE });
  });

  return app;
}
