/**
 * The relay on Cloudflare Workers: `export { default, RelayState } from 'cdp-edge/relay/cloudflare'`.
 * Vars and secrets carry the relay's variable names (docs/architecture.md); `RELAY_STATE` binds the
 * Durable Object class whose objects hold each site's dedupe ids (`RELAY_SHARDS` shards) and its
 * address-lookup counter; `RELAY_RATE_LIMIT` (optional) limits visitors; `RELAY_QUEUE` (optional)
 * turns on queued forwarding; `ANALYTICS` (optional) receives the relay's counts in Workers
 * Analytics Engine (docs/analytics-engine.md); `ASSETS` (optional) serves cdp.js. Log lines go to
 * Workers Logs as JSON `console.log` lines, at the level `RELAY_LOG` sets (off, info or debug).
 *
 * @example
 * // src/index.ts of your Worker
 * export { default, RelayState } from 'cdp-edge/relay/cloudflare';
 * @module
 */
import type { Hono } from 'hono';
import { relayError } from '../api/index.js';
import { createRelay } from './app.js';
import type { QueuedEntry } from './workers/handoff.js';
import type { CfGeo } from './ingest/enrich.js';
import { systemClock } from './core/clock.js';
import { createUpstream, sharedBackoff } from './deliver/caller.js';
import { fetchTransport } from './deliver/transport.js';
import { type AmbiguousPolicy, parseAmbiguousPolicy, parseConfig, type RelayConfig } from './core/config.js';
import { MISCONFIGURED, RelayConfigError } from './core/errors.js';
import type { RelayStore } from './state/store.js';
import { createBindingLimiter, createMemoryLimiter } from './core/limits.js';
import { createConsoleLogger, type Logger, scrubLine } from './core/logging.js';
import { analyticsObserver } from './workers/analytics.js';
import { queueProducer, consumeQueue } from './workers/queue.js';
import { createDurableStore, DEFAULT_SHARDS } from './workers/state.js';
import { durableRefusals } from './workers/refusals.js';
import { createDeliveryLedger, createDurablePacer, type DeliveryLedger, pacerName } from './workers/delivery.js';
import { DEFAULT_PLATFORM_RATE } from './state/pace.js';
import type { Pacer } from './state/outbox.js';

/** How long the consumer starts calls for: a batch ends well inside Queues' limits, and its leases with it. */
const CONSUMER_BUDGET_MS = 25_000;
/** How long one platform call of the consumer may take before it counts as unanswered (ambiguous). */
const CONSUMER_CALL_TIMEOUT_MS = 10_000;
import type { ExecutionContext, MessageBatch, RelayEnv } from './workers/types.js';

// workerd takes every export of the main module for an entrypoint: export only the handler and the
// Durable Object class here; the building blocks are in `cdp-edge/relay/workers`.
export { RelayState } from './workers/state.js';
export type { RelayEnv } from './workers/types.js';

interface Built {
  config: RelayConfig;
  app: Hono;
  store: RelayStore;
  /** the delivery ledger: delivered ids per site, sharded by id */
  ledger: DeliveryLedger;
  /** one budget of platform calls for the deployment */
  pacer: Pacer;
  policy: AmbiguousPolicy;
  /** the log lines, at `config.logLevel` (the same fields as pino's on Node) */
  logger: Logger;
  /** Analytics Engine when `ANALYTICS` is bound */
  observer: ReturnType<typeof analyticsObserver> | undefined;
}

// The env object is stable per isolate: parse and build once per env.
const built = new WeakMap<object, Built>();

function build(env: RelayEnv): Built {
  let entry = built.get(env);
  if (entry) return entry;
  const config = parseConfig(env);
  if (!env.RELAY_STATE) throw new RelayConfigError('RELAY_STATE', 'the Durable Object binding is missing; add it to wrangler.toml (see the template)');
  const shards = Number(env['RELAY_SHARDS'] ?? DEFAULT_SHARDS);
  if (!Number.isInteger(shards) || shards < 1 || shards > 1024)
    throw new RelayConfigError('RELAY_SHARDS', 'must be a whole number of shards per site from 1 to 1024');
  const period = Number(env['RELAY_RATE_LIMIT_PERIOD'] ?? 10);
  if (!(period === 10 || period === 60))
    throw new RelayConfigError('RELAY_RATE_LIMIT_PERIOD', 'must be 10 or 60 (seconds), the period of the [[ratelimits]] binding');
  const rate = Number(env['RELAY_PLATFORM_RATE'] ?? DEFAULT_PLATFORM_RATE);
  if (!(Number.isFinite(rate) && rate > 0))
    throw new RelayConfigError('RELAY_PLATFORM_RATE', 'must be a number of platform calls per second above 0 (10 on the professional plan, 30 on business)');
  const policy = parseAmbiguousPolicy(env['RELAY_AMBIGUOUS'] as string | undefined);
  if (env.RELAY_QUEUE && !env.RELAY_DEAD_LETTERS)
    throw new RelayConfigError(
      'RELAY_DEAD_LETTERS',
      "RELAY_QUEUE is bound but the dead-letter queue's producer is not; bind the queue's dead_letter_queue as RELAY_DEAD_LETTERS (see the template)",
    );
  const store = createDurableStore(env.RELAY_STATE, shards);
  const ledger = createDeliveryLedger(env.RELAY_STATE, shards);
  const pacer = createDurablePacer(env.RELAY_STATE, pacerName(config.baseUrl, config.apiKey), rate);
  const logger = createConsoleLogger(config.logLevel);
  const observer = env.ANALYTICS ? analyticsObserver(env.ANALYTICS) : undefined;
  const app = createRelay(config, {
    store,
    logger,
    ...(observer ? { observer } : {}),
    // Requests: the Rate Limiting binding when bound (no Durable Object call), else buckets per
    // isolate. Refusals: in the RelayState objects, the same for every isolate (workers/refusals.ts).
    limiter: durableRefusals(env.RELAY_STATE, env.RELAY_RATE_LIMIT ? createBindingLimiter(env.RELAY_RATE_LIMIT, period) : createMemoryLimiter()),
    // Queues are the Workers outbox; without one, each request forwards its own items.
    ...(env.RELAY_QUEUE ? { enqueue: queueProducer(env.RELAY_QUEUE) } : { inline: true }),
    // Proxy calls (and /collect's own, without a queue) spend the deployment's budget first.
    pacer,
    snippet: async () => {
      const response = await env.ASSETS?.fetch('https://assets.local/cdp.js');
      return response?.ok ? new Uint8Array(await response.arrayBuffer()) : undefined;
    },
    // Cloudflare sets CF-Connecting-IP itself; a visitor cannot forge it.
    clientInfo: (c) => ({ ip: c.req.header('cf-connecting-ip'), cf: (c.req.raw as Request & { cf?: CfGeo }).cf }),
  });
  entry = { config, app, store, ledger, pacer, policy, logger, observer };
  built.set(env, entry);
  return entry;
}

/**
 * A misconfiguration: the caller gets a fixed message (a config error quotes what it could not
 * read: fragments of RELAY_SITES, RELAY_TOKENS, origins, base URLs); the log gets the variable and
 * the message, scrubbed like every other line.
 */
function misconfigured(error: unknown, env: RelayEnv): Response {
  const message = error instanceof RelayConfigError ? error.message : 'the relay could not start';
  // The config did not parse, so RELAY_LOG is read as it stands: only "off" silences this line.
  if (env['RELAY_LOG'] !== 'off') {
    console.log(
      JSON.stringify(
        scrubLine({
          level: 'error',
          ts: new Date().toISOString(),
          kind: 'config',
          status: 500,
          error: error instanceof RelayConfigError ? error.variable : 'startup',
          message,
        }),
      ),
    );
  }
  return Response.json(relayError('relay_misconfigured', MISCONFIGURED), { status: 500, headers: { 'Cache-Control': 'no-store' } });
}

export default {
  async fetch(request: Request, env: RelayEnv, ctx: ExecutionContext): Promise<Response> {
    let app: Hono;
    try {
      app = build(env).app;
    } catch (error) {
      return misconfigured(error, env);
    }
    return app.fetch(request, env, ctx as never);
  },

  async queue(batch: MessageBatch<QueuedEntry>, env: RelayEnv): Promise<void> {
    const { config, ledger, pacer, policy, logger, observer } = build(env);
    if (!env.RELAY_DEAD_LETTERS) {
      // Nothing is sent: every message goes back to the queue until the binding is there.
      misconfigured(new RelayConfigError('RELAY_DEAD_LETTERS', "the queue consumer needs the dead-letter queue's producer binding"), env);
      batch.retryAll({ delaySeconds: 60 });
      return;
    }
    const upstream = createUpstream({
      baseUrl: config.baseUrl,
      apiKey: config.apiKey,
      transport: fetchTransport(fetch.bind(globalThis)),
      timeoutMs: CONSUMER_CALL_TIMEOUT_MS,
      backoff: sharedBackoff(config.baseUrl),
      now: Date.now,
      // The consumer's calls to the platform count in Analytics Engine like the requests' own.
      onCall: observer?.upstream,
    });
    await consumeQueue(
      batch,
      {
        upstream,
        ledger,
        pacer,
        policy,
        deadLetters: env.RELAY_DEAD_LETTERS,
        windowMs: config.windowMs,
        clock: systemClock,
        deadline: Date.now() + CONSUMER_BUDGET_MS,
        // What became of the entries, in Analytics Engine (`delivery` points) when bound.
        observe: observer?.delivery,
      },
      logger,
    );
  },
};
