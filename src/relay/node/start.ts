/**
 * Starts the relay on Node: the state (state.ts), the app's handlers, the node:http front on the
 * relay's port, the optional ops port, and a close that drains them in order.
 * @module
 */
import type { HttpBindings } from '@hono/node-server';
import { CONNECTION_LIMITS, type ConnectionLimits, listen } from '../../listen.js';
import { createRelayHandlers, type RelayDeps } from '../app.js';
import { isTrusted, limitAddress, resolveClientIp } from '../core/client-ip.js';
import { parseConfig, type RelayConfig } from '../core/config.js';
import { observeAll } from '../core/observe.js';
import { createNodeHttpTransport } from '../deliver/node-http.js';
import { reportToPrimary } from '../ops/cluster.js';
import { createRelayMetrics } from '../ops/metrics.js';
import { startOpsServer, type OpsServer } from '../ops/server.js';
import { createStatusRecorder } from '../ops/status.js';
import type { Outbox } from '../state/outbox.js';
import { connectionsPerAddress, metricsPortFrom, withPlanFile, withSecretFiles } from './env.js';
import { createNodeFront } from './front.js';
import { boundHeapGrowth } from './heap.js';
import { keepWasmOnLiftoff } from './malloc.js';
import { createPinoLogger } from './log.js';
import { openNodeState } from './state.js';

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
  /**
   * Bound how far V8 lets this process's old generation grow (node/heap.ts), and keep WebAssembly
   * on V8's baseline compiler so glibc's malloc gives freed memory back (node/malloc.ts): V8 flags
   * of the whole process and one full GC, so a relay inside your own server leaves them alone
   * unless asked; the CLI (`cdp-edge relay`, the container) asks. @default false
   */
  boundHeapGrowth?: boolean;
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

/** What the Node entry fills in when the caller does not: Node's own HMAC and the built snippet. */
export type NodeDefaults = Required<Pick<RelayDeps, 'hmac' | 'snippet'>>;

/** Starts the relay on Node; resolves once it listens. */
export async function startNodeRelay(options: StartRelayOptions, defaults: NodeDefaults): Promise<RunningRelay> {
  // Before undici's parser is compiled, for a caller who gives the undici transport (malloc.ts).
  if (options.boundHeapGrowth) keepWasmOnLiftoff();
  // RELAY_PLAN is a file path on Node, and secrets may come from files: their text is what parseConfig reads
  const env = withPlanFile(withSecretFiles(options.env ?? process.env));
  const config = options.config ?? parseConfig(env);
  const state = await openNodeState(options, config, env);
  const { store, limiter, outbox, pacer } = state;
  // Node's global fetch costs more per upstream call than the whole relay around it: node:http's pooled client instead (deliver/node-http.ts).
  const pool = options.transport === undefined && options.fetch === undefined ? createNodeHttpTransport() : undefined;
  const metrics = createRelayMetrics({ outbox, limits: config.outboxLimits });
  const status = createStatusRecorder();
  const handlers = createRelayHandlers(config, {
    ...options,
    ...(pool === undefined ? {} : { transport: pool }),
    hmac: options.hmac ?? defaults.hmac,
    logger: options.logger ?? createPinoLogger(config.logLevel),
    observer: observeAll(options.observer, metrics.observer, options.clusterWorker ? reportToPrimary(metrics.registry) : status.observer),
    metrics,
    store,
    limiter,
    outbox,
    pacer,
    snippet: options.snippet ?? defaults.snippet,
    sharedReads: true,
    clientInfo: (c) => {
      const incoming = (c.env as HttpBindings | undefined)?.incoming;
      return { ip: resolveClientIp(incoming?.socket.remoteAddress, c.req.header('x-forwarded-for'), config.trustProxy) };
    },
  });
  const hostname = options.hostname ?? '127.0.0.1';
  // A request may take the platform budget to answer; its body must arrive well within the request deadline.
  // Connections are capped per visitor address (an IPv6 /64 as one); a trusted proxy's are not.
  const limits = {
    requestTimeoutMs: Math.max(CONNECTION_LIMITS.requestTimeoutMs, config.budgetMs + 10_000),
    maxConnectionsPerAddress: connectionsPerAddress(env['RELAY_MAX_CONNECTIONS_PER_ADDRESS']),
    addressOf: (address: string) => (isTrusted(address, config.trustProxy) ? undefined : limitAddress(address, config.ipv6Prefix)),
    ...options.connections,
  };
  // Asked for (the CLI): the old generation grows to 1.5× its live heap, not 4× (heap.ts).
  if (options.boundHeapGrowth) boundHeapGrowth();
  const listening = await listen(createNodeFront(handlers, config), options.port ?? 8787, hostname, limits).catch(async (error: unknown) => {
    await state.close();
    throw error;
  });
  const { server } = listening;
  const metricsPort = options.clusterWorker ? undefined : (options.metricsPort ?? metricsPortFrom(env['RELAY_METRICS_PORT']));
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
      await state.close();
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
      await state.close();
      await pool?.close();
    },
  };
}
