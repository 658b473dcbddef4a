/**
 * The relay: one runtime-neutral Hono app. `POST /collect` for browsers (the /collect contract, docs/architecture.md),
 * `POST /server/collect` for servers' items (the same path, behind a relay token), the `/v1/...` proxy for servers
 * (the proxy contract, docs/architecture.md), `GET /cdp.js` (+ an alias) and `GET /healthz`.
 * The runtime entries (`node.ts`, `cloudflare.ts`) only add the connection's address and state.
 *
 * @example
 * const relay = createRelay(parseConfig(env), { store: createMemoryStore() });
 * export default { fetch: relay.fetch };
 * @module
 */
import { Hono, type Context } from 'hono';
import { relayError, SERVER_COLLECT_PATH } from '../api/index.js';
import type { RelayConfig } from './core/config.js';
import { anySiteAllows, corsHeaders, preflightHeaders } from './core/cors.js';
import { chooseHandoff, type HandoffChoice } from './app/handoff.js';
import { createInFlight } from './app/in-flight.js';
import { createCollectAnswerer, type CollectHttpAnswer } from './ingest/answer.js';
import type { Enqueue } from './workers/handoff.js';
import { fromRequest, type CollectRequest } from './ingest/body.js';
import { collectFromServer } from './ingest/server.js';
import { createTokenVerifier } from './core/tokens.js';
import type { ClientInfo } from './ingest/enrich.js';
import type { Hmac } from './ingest/identity.js';
import { systemClock, type Clock } from './core/clock.js';
import { describeError, RelayHttpError, type HttpAnswer, unexpectedLogger } from './core/errors.js';
import { createConsoleLogger, type LogLine, scrubbing, silentLogger, writes, type Logger } from './core/logging.js';
import { observeAll, type RelayObserver, type UpstreamCall } from './core/observe.js';
import type { MetricsSource } from './ops/metrics.js';
import { createHealthRoutes } from './ops/health.js';
import { createReadiness, type Readiness } from './ops/ready.js';
import { ADMIN_PATHS, createAdminRoutes } from './ops/admin.js';
import { createSuppressionList, SUPPRESSION_REFRESH_MS } from './state/suppression.js';
import { createShapes } from './ingest/shapes.js';
import { createMemoryLimiter, type OwnLimiter, withLimitAll } from './core/limits.js';
import { createMemoryStore } from './state/memory.js';
import { createProxy, type ProxyRequest } from './proxy/index.js';
import { createSnippetHandler, type SnippetSource } from './ingest/snippet.js';
import type { RelayStore } from './state/store.js';
import { createUpstream, sharedBackoff, type Backoff } from './deliver/caller.js';
import type { Deliverer } from './deliver/deliverer.js';
import { createMemoryPacer } from './state/memory-outbox.js';
import { CATCH_UP_MS } from './state/pace.js';
import type { Leased, Outbox, Pacer } from './state/outbox.js';
import { fetchTransport, type Transport } from './deliver/transport.js';

/** Everything that touches the outside world, injected; each has a default. */
export interface RelayDeps extends Pick<HandoffChoice, 'shapes'> {
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** HMAC-SHA256 for identity checks (the Node entry gives `node:crypto`'s) @default Web Crypto's */
  hmac?: Hmac;
  /** how calls reach the platform (the Node entry gives `createNodeHttpTransport()`); wins over `fetch` @default a transport on `fetch` */
  transport?: Transport;
  /** called once per upstream call of /collect and the proxy (metrics) */
  onUpstreamCall?: (call: UpstreamCall) => void;
  /** told of every /collect answer, proxy call and upstream call (metrics, the status page, Analytics Engine) */
  observer?: RelayObserver;
  /** `GET /metrics` on the relay's own port for tokens with the `metrics` scope (the Node entry gives prom-client's) */
  metrics?: MetricsSource;
  /** how recent a platform answer keeps the relay ready without a probe @default 60 000 ms */
  platformFreshMs?: number;
  /** @default the system clock */
  clock?: Clock;
  /** dedupe ids and counters @default an in-memory store (forgets on restart) */
  store?: RelayStore;
  /** per-visitor and site-wide request limits (`limitAll` made from `limit` if absent) @default buckets in this process or isolate */
  limiter?: OwnLimiter;
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
  /**
   * where accepted items wait for the deliverer (SQLite or Redis on Node) @default an in-memory outbox
   * (forgotten on restart), drained by a deliverer in this process
   */
  outbox?: Outbox;
  /** the deployment's budget of platform calls, shared by deliveries and the proxy @default one in this process at `RELAY_PLATFORM_RATE` */
  pacer?: Pacer;
  /** run a deliverer in this process (it takes the outbox's lead lock; a standby waits) @default true */
  deliver?: boolean;
  /** told of platform refusals after acceptance (they are charged to their visitors too) */
  onRefused?: (entries: readonly Leased[], wholeCall: boolean) => void;
  /** Workers Queues: accepted items go to the queue (its consumer puts them into the outbox) instead of the outbox */
  enqueue?: Enqueue;
  /** how old this process's copy of the suppression list may get (state/suppression.ts) @default SUPPRESSION_REFRESH_MS */
  suppressionRefreshMs?: number;
  /** Node: a request may wait for a shared read another began, so one suppression read is in flight per process; never on Workers (core/last-value.ts) */
  sharedReads?: boolean;
  /** how old the outbox's pending count the idle room reads may be (ingest/idle-room.ts; Workers: 1 s) @default 0, read each time */
  pendingMaxAgeMs?: number;
}

const NO_STORE = 'no-store';

/** The relay's Hono app and, for a runtime front that skips building a `Request`, its POST /collect. */
export interface RelayHandlers {
  app: Hono;
  collect(request: CollectRequest, info: ClientInfo): Promise<CollectHttpAnswer>;
  /** a call under `/v1` (the proxy), for a runtime front that skips building a `Request` */
  proxy(request: ProxyRequest): Promise<HttpAnswer>;
  /** what `GET /readyz` answers */
  readiness: Readiness;
  /** resolves when no POST /collect is being handled (a graceful stop waits for this before closing the store) */
  drain(): Promise<void>;
  /** this process's deliverer, when it runs one */
  deliverer: Deliverer | undefined;
  /** where accepted items wait (undefined on the Workers paths: a queue, or the platform itself) */
  outbox: Outbox | undefined;
  /** Resolves once the outbox is empty and no call is in flight (tests); at once without a deliverer. */
  drained(options?: { timeoutMs?: number }): Promise<void>;
  /** Stops the deliverer: the call in flight finishes and settles, the other leases go back. */
  close(): Promise<void>;
}

/** Creates the relay's Hono app; `app.fetch` is the handler for every runtime. */
export function createRelay(config: RelayConfig, deps: RelayDeps = {}): Hono {
  return createRelayHandlers(config, deps).app;
}

export function createRelayHandlers(config: RelayConfig, deps: RelayDeps = {}): RelayHandlers {
  const clock = deps.clock ?? systemClock;
  // Every line is scrubbed by the logger (logging.ts), whoever gave it: no call site scrubs.
  const logger = scrubbing(deps.logger ?? (config.logLevel === 'off' ? silentLogger : createConsoleLogger(config.logLevel)));
  const store = deps.store ?? createMemoryStore();
  const limiter = withLimitAll(deps.limiter ?? createMemoryLimiter());
  const transport = deps.transport ?? fetchTransport(deps.fetch ?? globalThis.fetch.bind(globalThis));
  // One 429 window per upstream, shared by /collect and the proxy: the platform limits the key, not the route.
  const backoff = deps.backoff ?? sharedBackoff(config.baseUrl);
  const readiness = createReadiness({
    store,
    transport,
    baseUrl: config.baseUrl,
    now: () => clock.now(),
    freshMs: deps.platformFreshMs ?? 60_000,
    // The public /readyz says only ready or not: why goes to the log (and the metrics port).
    onChange: (state) =>
      logger({
        level: state.ready ? 'info' : 'warn',
        ts: new Date(clock.now()).toISOString(),
        kind: 'ready',
        method: 'GET',
        path: '/readyz',
        status: state.ready ? 200 : 503,
        ms: 0,
        ...(state.reason === undefined ? {} : { error: 'not_ready', reason: state.reason }),
      }),
  });
  const observer = observeAll(deps.observer, deps.onUpstreamCall && { upstream: deps.onUpstreamCall }, readiness.observer);
  // This process's own pacer: its one deliverer sends past one spacer, so it may catch up (state/pace.ts).
  const pacer = deps.pacer ?? createMemoryPacer(config.platformRate, CATCH_UP_MS);
  const upstream = createUpstream({
    baseUrl: config.baseUrl,
    apiKey: config.apiKey,
    transport,
    timeoutMs: Math.max(500, Math.min(10_000, config.budgetMs)),
    backoff,
    now: () => clock.now(),
    onCall: observer.upstream,
    // Calls not paced by the deliverer (the proxy's) take a `proxy` slot; a 429 holds every process.
    pacer,
  });
  const logUnexpected = unexpectedLogger(
    (line) => logger(line as LogLine),
    () => clock.now(),
  );
  const shapes = deps.shapes ?? createShapes();
  const { handoff, outbox, deliverer } = chooseHandoff({ ...deps, config, limiter, upstream, pacer, clock, observer, logger, shapes });
  const refreshMs = deps.suppressionRefreshMs ?? SUPPRESSION_REFRESH_MS;
  const suppression = createSuppressionList(outbox ?? deps.outbox, refreshMs, (error) => logUnexpected(error, config.collectPath, 'POST'), deps.sharedReads);
  const context = { config, store, limiter, clock, handoff, shapes, hmac: deps.hmac, suppression };
  const sites = [...config.sites.values()];
  const app = new Hono();

  const known = new Set([...config.scriptPaths, '/healthz', '/readyz', '/metrics', ...ADMIN_PATHS, config.collectPath, SERVER_COLLECT_PATH]);
  app.use('*', async (c, next) => {
    const started = clock.now();
    await next();
    if (!c.res.headers.has('Cache-Control')) c.res.headers.set('Cache-Control', NO_STORE);
    // POST /collect logs its own richer line and the proxy its audit line; every other answer gets
    // a short one. Unknown paths are logged as "*": a path may carry anything.
    const pathname = new URL(c.req.url).pathname;
    if (pathname.startsWith('/v1/') || pathname === '/v1' || (c.req.method === 'POST' && (pathname === config.collectPath || pathname === SERVER_COLLECT_PATH)))
      return;
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

  const answering = { context, clock, observer, logger, debug: writes(config.logLevel, 'debug') };
  const inFlight = createInFlight();
  const trackedCollect = inFlight.track(createCollectAnswerer({ ...answering, sites, path }));
  // The server door: /collect's path for servers holding a `collect` token (ingest/server.ts); no CORS, no visitor.
  const verify = createTokenVerifier(config.tokens);
  const handle = (request: CollectRequest, _: ClientInfo, named: { site?: string }) => collectFromServer(context, verify, request, named);
  const serverCollect = inFlight.track(createCollectAnswerer({ ...answering, sites: [], path: SERVER_COLLECT_PATH, handle }));
  const doors = [
    { at: path, answer: trackedCollect, info: (c: Context) => deps.clientInfo?.(c) ?? {}, allow: 'POST, OPTIONS' },
    { at: SERVER_COLLECT_PATH, answer: serverCollect, info: () => ({}), allow: 'POST' },
  ];
  for (const door of doors) {
    app.post(door.at, async (c) => {
      const answer = await door.answer(fromRequest(c.req.raw), await door.info(c));
      return c.body(answer.body, answer.status as 200, answer.headers);
    });
    app.all(door.at, (c) =>
      c.json(relayError('method_not_allowed', `${c.req.method} is not served here; send POST with the batch as the body.`), 405, { Allow: door.allow }),
    );
  }

  const snippet = createSnippetHandler(deps.snippet);
  for (const scriptPath of config.scriptPaths) app.get(scriptPath, (c) => snippet(c.req.raw));

  // Liveness: the process answers. Readiness: the store answers and the platform did lately (or a probe does).
  app.route('/', createHealthRoutes({ readiness, metrics: deps.metrics, tokens: config.tokens }));

  // The outbox's dead letters and erasure for admin tokens (`cdp-edge outbox|erase --relay URL`): whichever outbox this relay hands items to.
  const erasure = { upstream, suppression, siteKeys: config.sites, sleep: (ms: number) => clock.sleep(ms) };
  app.route('/', createAdminRoutes({ tokens: config.tokens, outbox: outbox ?? deps.outbox, erasure, now: () => clock.now(), logger, onError: logUnexpected }));

  const proxy = createProxy({
    tokens: config.tokens,
    upstream: { baseUrl: config.baseUrl, apiKey: config.apiKey },
    transport,
    onCall: observer.upstream,
    onError: (error) => logUnexpected(error, '/v1/*', 'POST'),
    logger: (entry) => {
      observer.proxy?.(entry);
      logger(entry);
    },
    now: () => clock.now(),
    sleep: (ms) => clock.sleep(ms),
    backoff,
    pacer,
  });
  app.route('/', proxy.app);

  app.notFound((c) =>
    c.json(
      relayError(
        'not_found',
        `Nothing is served at ${c.req.method} ${new URL(c.req.url).pathname}; the relay serves POST ${path}, POST ${SERVER_COLLECT_PATH}, GET /cdp.js, GET /healthz and the /v1/ proxy.`,
      ),
      404,
    ),
  );

  app.onError((error, c) => {
    const pathname = new URL(c.req.url).pathname;
    if (error instanceof RelayHttpError) return error.toResponse();
    logger({
      level: 'error',
      ts: new Date(clock.now()).toISOString(),
      kind: 'error',
      method: c.req.method,
      path: known.has(pathname) ? pathname : '*',
      status: 500,
      ms: 0,
      error: error.name,
      cause: describeError(error),
    });
    return c.json(relayError('internal_error', 'The relay failed unexpectedly; nothing was lost, retry later.'), 500, { 'Cache-Control': NO_STORE });
  });

  return {
    app,
    collect: trackedCollect,
    proxy: proxy.call,
    readiness,
    drain: inFlight.drain,
    deliverer,
    outbox,
    drained: async (options) => deliverer?.drained(options),
    close: async () => deliverer?.stop(),
  };
}
