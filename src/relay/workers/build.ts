/**
 * The Worker's relay, built once per env (per isolate) from its vars, secrets and bindings: the
 * app (ingest hands accepted items to the outbox objects, or to the queue when `RELAY_QUEUE` is
 * bound), the key's pacer, and the answer to a misconfiguration.
 * @module
 */
import type { Hono } from 'hono';
import { relayError } from '../../api/index.js';
import { createRelay } from '../app.js';
import { parseConfig, type RelayConfig } from '../core/config.js';
import type { Outbox } from '../state/outbox.js';
import { MISCONFIGURED, RelayConfigError } from '../core/errors.js';
import type { CfGeo } from '../ingest/enrich.js';
import { PENDING_MAX_AGE_MS } from '../ingest/idle-room.js';
import { createBindingLimiter, createMemoryLimiter } from '../core/limits.js';
import { createConsoleLogger, type Logger, scrubLine } from '../core/logging.js';
import { analyticsObserver } from './analytics.js';
import { keyPacer } from './delivery.js';
import { createShardedOutbox, MAX_SHARDS } from './outbox.js';
import { queueProducer } from './queue.js';
import { durableRefusals } from './refusals.js';
import { durableShapes } from './shapes.js';
import { createDurableStore, DEFAULT_SHARDS } from './state.js';
import type { RelayEnv } from './types.js';

export interface Built {
  config: RelayConfig;
  app: Hono;
  /** the outbox objects, seen as one */
  outbox: Outbox;
  logger: Logger;
}

const built = new WeakMap<object, Built>();

export function build(env: RelayEnv): Built {
  let entry = built.get(env);
  if (entry) return entry;
  const config = parseConfig(env);
  if (!env.RELAY_STATE) throw new RelayConfigError('RELAY_STATE', 'the Durable Object binding is missing; add it to wrangler.toml (see the template)');
  if (!env.RELAY_OUTBOX) throw new RelayConfigError('RELAY_OUTBOX', 'the outbox Durable Object binding is missing; add it to wrangler.toml (see the template)');
  const shards = Number(env['RELAY_SHARDS'] ?? DEFAULT_SHARDS);
  if (!Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS)
    throw new RelayConfigError('RELAY_SHARDS', `must be a whole number of outbox objects from 1 to ${MAX_SHARDS}`);
  const period = Number(env['RELAY_RATE_LIMIT_PERIOD'] ?? 10);
  if (!(period === 10 || period === 60))
    throw new RelayConfigError('RELAY_RATE_LIMIT_PERIOD', 'must be 10 or 60 (seconds), the period of the [[ratelimits]] binding');
  const outbox = createShardedOutbox(env.RELAY_OUTBOX, shards);
  const logger = createConsoleLogger(config.logLevel);
  const observer = env.ANALYTICS ? analyticsObserver(env.ANALYTICS) : undefined;
  const app = createRelay(config, {
    store: createDurableStore(env.RELAY_STATE, shards),
    logger,
    ...(observer ? { observer } : {}),
    // Requests: the Rate Limiting binding when bound (no Durable Object call), else buckets per
    // isolate. Refusals: in the RelayState objects, the same for every isolate (refusals.ts).
    // Shapes the platform took: taught by the outbox objects to the site's RelayState object (shapes.ts).
    shapes: durableShapes(env.RELAY_STATE),
    limiter: durableRefusals(env.RELAY_STATE, env.RELAY_RATE_LIMIT ? createBindingLimiter(env.RELAY_RATE_LIMIT, period) : createMemoryLimiter()),
    // Accepted once in an outbox object (or the queue, whose consumer puts them there); each object's alarm delivers.
    outbox,
    deliver: false,
    // Reading the pending count asks every outbox object: the idle room reads it at most once a second per isolate.
    pendingMaxAgeMs: PENDING_MAX_AGE_MS,
    ...(env.RELAY_QUEUE ? { enqueue: queueProducer(env.RELAY_QUEUE) } : {}),
    // Proxy calls spend the deployment's budget first.
    pacer: keyPacer(env, config),
    snippet: async () => {
      const response = await env.ASSETS?.fetch('https://assets.local/cdp.js');
      return response?.ok ? new Uint8Array(await response.arrayBuffer()) : undefined;
    },
    // Cloudflare sets CF-Connecting-IP itself; a visitor cannot forge it.
    clientInfo: (c) => ({ ip: c.req.header('cf-connecting-ip'), cf: (c.req.raw as Request & { cf?: CfGeo }).cf }),
  });
  entry = { config, app, outbox, logger };
  built.set(env, entry);
  return entry;
}

/**
 * A misconfiguration: the caller gets a fixed message (a config error quotes what it could not
 * read: fragments of RELAY_SITES, RELAY_TOKENS, origins, base URLs); the log gets the variable and
 * the message, scrubbed like every other line.
 */
export function misconfigured(error: unknown, env: RelayEnv): Response {
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
