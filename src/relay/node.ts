/**
 * The relay on Node: the runtime-neutral app on `@hono/node-server`, the socket's address
 * as the visitor's (or `X-Forwarded-For` from `RELAY_TRUST_PROXY` addresses only), and a
 * file-backed store so forwarded ids and the lookup counter survive a restart.
 *
 * @example
 * const relay = await startRelay({ port: 8787 }); // reads Contract 3 from process.env
 * console.log(relay.url); await relay.close();
 * @module
 */
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { serve, type HttpBindings } from '@hono/node-server';
import { createRelay, type RelayDeps } from './app.js';
import { resolveClientIp } from './client-ip.js';
import { parseConfig, type RelayConfig } from './config.js';
import { createFileStore } from './file-store.js';
import { createMemoryStore } from './memory.js';
import { createNodeFetch } from './node-fetch.js';

export { createFileStore, filePersistence } from './file-store.js';
export { createNodeFetch } from './node-fetch.js';

export interface StartRelayOptions extends Omit<RelayDeps, 'clientInfo'> {
  /** @default 8787; 0 picks a free port */
  port?: number;
  /** @default '127.0.0.1' */
  hostname?: string;
  /** where Contract 3's variables are read @default process.env */
  env?: Record<string, string | undefined>;
  /** a parsed configuration; wins over `env` */
  config?: RelayConfig;
  /** file that keeps forwarded ids and counters across restarts @default env RELAY_STATE_FILE, else memory only */
  stateFile?: string;
}

export interface RunningRelay {
  url: string;
  port: number;
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

/** Starts the relay on Node; resolves once it listens. */
export async function startRelay(options: StartRelayOptions = {}): Promise<RunningRelay> {
  const env = options.env ?? process.env;
  const config = options.config ?? parseConfig(env);
  const stateFile = options.stateFile ?? env['RELAY_STATE_FILE'];
  const store = options.store ?? (stateFile ? createFileStore(stateFile) : createMemoryStore());
  await (store as { ready?: Promise<void> }).ready;
  const app = createRelay(config, {
    ...options,
    // Node's global fetch costs more per upstream call than the whole relay around it.
    fetch: options.fetch ?? createNodeFetch(),
    store,
    snippet: options.snippet ?? readSnippet,
    clientInfo: (c) => {
      const incoming = (c.env as HttpBindings | undefined)?.incoming;
      return { ip: resolveClientIp(incoming?.socket.remoteAddress, c.req.header('x-forwarded-for'), config.trustProxy) };
    },
  });
  const hostname = options.hostname ?? '127.0.0.1';
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: options.port ?? 8787, hostname }, () => resolve(s));
    s.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const host = hostname.includes(':') ? `[${hostname}]` : hostname;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}
