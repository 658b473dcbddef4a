/**
 * The relay on Node: POST /collect straight from node:http, the rest of the runtime-neutral app on `@hono/node-server`, the socket's address
 * as the visitor's (or `X-Forwarded-For` from `RELAY_TRUST_PROXY` addresses only), and a
 * file-backed store so forwarded ids and the lookup counter survive a restart.
 *
 * @example
 * const relay = await startRelay({ port: 8787 }); // reads the relay's variables from process.env
 * console.log(relay.url); await relay.close();
 * @module
 */
import { readFile } from 'node:fs/promises';
import { createHmac } from 'node:crypto';
import type { Hmac } from './ingest/identity.js';
import { CONNECTION_LIMITS, type ConnectionLimits, listen } from '../listen.js';
import type { HttpBindings } from '@hono/node-server';
import { createRelayHandlers, type RelayDeps } from './app.js';
import { createMemoryOutbox, createMemoryPacer } from './state/memory-outbox.js';
import type { Outbox } from './state/outbox.js';
import { createNodeFront } from './node/front.js';
import { resolveClientIp } from './core/client-ip.js';
import { withPlanFile } from '../plan/files.js';
import { parseConfig, type RelayConfig } from './core/config.js';
import { RelayConfigError } from './core/errors.js';
import { createMemoryLimiter } from './core/limits.js';
import { createMemoryStore } from './state/memory.js';
import { createNodeState } from './state/node.js';
import { createUndiciTransport } from './deliver/undici.js';
import { createPinoLogger } from './node/log.js';
import { observeAll } from './core/observe.js';
import { createRelayMetrics } from './ops/metrics.js';
import { reportToPrimary } from './ops/cluster.js';
import { startOpsServer, type OpsServer } from './ops/server.js';
import { createStatusRecorder } from './ops/status.js';

/** HMAC-SHA256 by `node:crypto`: about a sixth of Web Crypto's cost per identity check on Node. */
export const nodeHmac: Hmac = (key, message) => new Uint8Array(createHmac('sha256', key).update(message).digest());

export { identityHash } from './ingest/identity.js';
export { createNodeState, DEFAULT_STATE_FILE, type NodeState, type NodeStateOptions } from './state/node.js';
export { createSqliteStore } from './state/sqlite.js';
export { createRedisState, type RedisState } from './state/redis.js';
export { createUndiciTransport, type UndiciTransport, type UndiciTransportOptions } from './deliver/undici.js';
export { createPinoLogger } from './node/log.js';
export { createRelayMetrics, type RelayMetrics, type RelayMetricsOptions } from './ops/metrics.js';
export { createStatusRecorder, renderStatusPage, type StatusRecorder, type StatusSnapshot } from './ops/status.js';
export { startOpsServer, createOpsApp, type OpsServer, type OpsServerOptions } from './ops/server.js';

export interface StartRelayOptions extends Omit<RelayDeps, 'clientInfo'> {
  /** @default 8787; 0 picks a free port */
  port?: number;
  /** @default '127.0.0.1' */
  hostname?: string;
  /** where the relay's variables are read @default process.env */
  env?: Record<string, string | undefined>;
  /** a parsed configuration; wins over `env` */
  config?: RelayConfig;
  /** SQLite file that keeps forwarded ids and counters across restarts (`:memory:` for none) @default env RELAY_STATE_FILE, else memory only */
  stateFile?: string;
  /** Redis shared by every relay process; wins over `stateFile` @default env RELAY_REDIS_URL */
  redisUrl?: string;
  /** serve /metrics, /status, /healthz and /readyz on this port too (0 = any free one) @default env RELAY_METRICS_PORT, else none */
  metricsPort?: number;
  /** the address of the metrics port; keep it private @default '127.0.0.1' */
  metricsHostname?: string;
  /** a worker of `cdp-edge relay --workers N`: its metrics and status events go to the primary, which serves the metrics port */
  clusterWorker?: boolean;
  /** header, request, keep-alive and idle deadlines of the relay's connections (src/listen.ts) @default CONNECTION_LIMITS, the request deadline at least the budget + 10 s */
  connections?: Partial<ConnectionLimits>;
}

export interface RunningRelay {
  url: string;
  port: number;
  /** which state it keeps, e.g. `SQLite .cdp-edge/relay-state.db` */
  state: string;
  /** the metrics port's address (its /status page, /metrics), when one was asked for */
  metricsUrl?: string;
  /** where accepted items wait for the deliverer (its dead-letter list included) */
  outbox: Outbox;
  /** Resolves once the outbox is empty and no platform call is in flight (tests, benchmarks). */
  drained(options?: { timeoutMs?: number }): Promise<void>;
  /** Stops: no new requests, those inside finish, the deliverer finishes its call and settles, then the store closes. */
  close(): Promise<void>;
}

/** dist/cdp.js next to the built relay, or in the package's dist/ when running from source. */
async function readSnippet(): Promise<Uint8Array | undefined> {
  for (const relative of ['../cdp.js', '../../dist/cdp.js']) {
    try {
      return await readFile(new URL(relative, import.meta.url));
    } catch {
      // try the next place
    }
  }
  return undefined;
}

/** `RELAY_METRICS_PORT` as a port number; undefined when unset. */
function portFrom(raw: string | undefined): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new RelayConfigError('RELAY_METRICS_PORT', `must be a port number (0–65535); got ${JSON.stringify(raw)}`);
  return port;
}

/** `RELAY_REDIS_UNSAFE`: `on` starts on a Redis that can lose accepted items; `off` (the default) refuses it. */
function redisUnsafe(raw: string | undefined): boolean {
  const value = raw?.trim().toLowerCase() || 'off';
  if (value !== 'on' && value !== 'off') throw new RelayConfigError('RELAY_REDIS_UNSAFE', `must be "on" or "off"; got ${JSON.stringify(raw)}`);
  return value === 'on';
}

/** Starts the relay on Node; resolves once it listens. */
export async function startRelay(options: StartRelayOptions = {}): Promise<RunningRelay> {
  // RELAY_PLAN is a file path on Node: its text is what parseConfig reads
  const env = withPlanFile(options.env ?? process.env);
  const config = options.config ?? parseConfig(env);
  const stateFile = options.stateFile ?? env['RELAY_STATE_FILE'];
  const redisUrl = options.redisUrl ?? env['RELAY_REDIS_URL'];
  const state =
    options.store !== undefined
      ? { store: options.store, limiter: options.limiter ?? createMemoryLimiter(), description: 'given' }
      : stateFile === undefined && redisUrl === undefined
        ? { store: createMemoryStore(), limiter: options.limiter ?? createMemoryLimiter(), description: 'memory (forgotten on restart)' }
        : await createNodeState({
            stateFile,
            redisUrl,
            redisUnsafe: redisUnsafe(env['RELAY_REDIS_UNSAFE']),
            platformRate: config.platformRate,
            log: (message) => console.log(`cdp-edge relay: ${message}`),
          });
  const { store, limiter } = state;
  // The outbox lives where the state does: Redis for many processes, the SQLite file for one machine.
  const outbox = options.outbox ?? ('outbox' in state ? state.outbox : createMemoryOutbox());
  const pacer = options.pacer ?? ('pacer' in state ? state.pacer : createMemoryPacer(config.platformRate));
  // Node's global fetch costs more per upstream call than the whole relay around it: undici's pooled request instead.
  const pool = options.transport === undefined && options.fetch === undefined ? createUndiciTransport() : undefined;
  const metrics = createRelayMetrics({ outbox, limits: config.outboxLimits });
  const status = createStatusRecorder();
  const handlers = createRelayHandlers(config, {
    ...options,
    ...(pool === undefined ? {} : { transport: pool }),
    hmac: options.hmac ?? nodeHmac,
    logger: options.logger ?? createPinoLogger(config.logLevel),
    observer: observeAll(options.observer, metrics.observer, options.clusterWorker ? reportToPrimary(metrics.registry) : status.observer),
    metrics,
    store,
    limiter,
    outbox,
    pacer,
    snippet: options.snippet ?? readSnippet,
    clientInfo: (c) => {
      const incoming = (c.env as HttpBindings | undefined)?.incoming;
      return { ip: resolveClientIp(incoming?.socket.remoteAddress, c.req.header('x-forwarded-for'), config.trustProxy) };
    },
  });
  const hostname = options.hostname ?? '127.0.0.1';
  // The store is closed with the relay only when the relay opened it.
  const closeStore = options.store !== undefined ? async () => {} : 'close' in state ? state.close : () => store.close();
  // A request may take the platform budget to answer; its body must arrive well within the request deadline.
  const limits = { requestTimeoutMs: Math.max(CONNECTION_LIMITS.requestTimeoutMs, config.budgetMs + 10_000), ...options.connections };
  const listening = await listen(createNodeFront(handlers, config), options.port ?? 8787, hostname, limits).catch(async (error: unknown) => {
    await closeStore();
    throw error;
  });
  const { server } = listening;
  const metricsPort = options.clusterWorker ? undefined : (options.metricsPort ?? portFrom(env['RELAY_METRICS_PORT']));
  let ops: OpsServer | undefined;
  if (metricsPort !== undefined) {
    try {
      ops = await startOpsServer({
        port: metricsPort,
        hostname: options.metricsHostname ?? '127.0.0.1',
        metrics,
        status: status.snapshot,
        readiness: handlers.readiness,
      });
    } catch (error) {
      await listening.close();
      await closeStore();
      throw error;
    }
  }
  return {
    url: listening.url,
    port: listening.port,
    state: state.description,
    ...(ops === undefined ? {} : { metricsUrl: ops.url }),
    outbox,
    drained: (drainOptions) => handlers.drained(drainOptions),
    close: async () => {
      await ops?.close();
      // No new connections; requests already inside finish (their items settle in the store) before it closes.
      const closed = new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
      server.closeIdleConnections();
      await Promise.race([handlers.drain(), new Promise((resolve) => setTimeout(resolve, config.budgetMs + 1_000).unref())]);
      server.closeAllConnections();
      await closed;
      // The call in flight finishes and settles; the deliverer's other leases go back to the outbox.
      await handlers.close();
      await closeStore();
      await pool?.close();
    },
  };
}
