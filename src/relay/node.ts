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
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import type { Hmac } from './ingest/identity.js';
import { startNodeRelay, type RunningRelay, type StartRelayOptions } from './node/start.js';

const secretKeys = new WeakMap<Uint8Array, KeyObject>();
/**
 * HMAC-SHA256 by `node:crypto`: about a sixth of Web Crypto's cost per identity check on Node. Each
 * key becomes a `KeyObject` on its first use, as Web Crypto's key is imported once (1.4 instead of
 * 2.7 µs a call, hot).
 */
export const nodeHmac: Hmac = (key, message) => {
  let secret = secretKeys.get(key);
  if (secret === undefined) {
    secret = createSecretKey(key);
    secretKeys.set(key, secret);
  }
  return new Uint8Array(createHmac('sha256', secret).update(message).digest());
};

export type { RunningRelay, StartRelayOptions } from './node/start.js';
export { identityHash } from './ingest/identity.js';
export { createNodeState, DEFAULT_STATE_FILE, type NodeState, type NodeStateOptions } from './state/node.js';
export { createSqliteStore } from './state/sqlite.js';
export { createRedisState, type RedisState } from './state/redis.js';
export { createNodeHttpTransport, type NodeHttpTransport, type NodeHttpTransportOptions } from './deliver/node-http.js';
export { createUndiciTransport, type UndiciTransport, type UndiciTransportOptions } from './deliver/undici.js';
export { createPinoLogger, gatheredLines } from './node/log.js';
export { createRelayMetrics, type RelayMetrics, type RelayMetricsOptions } from './ops/metrics.js';
export { createStatusRecorder, renderStatusPage, type StatusRecorder, type StatusSnapshot } from './ops/status.js';
export { startOpsServer, createOpsApp, type OpsServer, type OpsServerOptions } from './ops/server.js';

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

/** Starts the relay on Node; resolves once it listens. */
export function startRelay(options: StartRelayOptions = {}): Promise<RunningRelay> {
  return startNodeRelay(options, { hmac: nodeHmac, snippet: readSnippet });
}
