/**
 * The Node servers' one way to listen and stop (relay, its metrics port, emulator, demo site):
 * resolves once listening, with the address to print; `close` stops accepting and ends every
 * connection, keep-alive ones included, so a stop never waits on an idle browser. Every server
 * bounds its connections ({@link ConnectionLimits}): headers and whole requests must arrive in
 * time, and a socket with no request in flight is closed after a short idle time, so idle or
 * trickling connections cannot pile up until the process runs out of file descriptors.
 * @module
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type ConnectionGuard, guardConnections } from './connection-guard.js';

/** How long a connection may take, or sit idle; all in ms. */
export interface ConnectionLimits {
  /** the request's headers must have arrived within this @default 10000 */
  headersTimeoutMs: number;
  /** the whole request (headers and body) must have arrived within this @default 30000 */
  requestTimeoutMs: number;
  /** a kept-alive connection waits this long for its next request @default 5000 */
  keepAliveTimeoutMs: number;
  /** a connection with no request in flight and nothing received is closed after this @default 10000 */
  idleTimeoutMs: number;
  /** requests one connection may carry before it is closed @default 1000 */
  maxRequestsPerSocket: number;
  /** connections one client address may hold open (connection-guard.ts) @default Infinity */
  maxConnectionsPerAddress: number;
  /** the key an address counts under for that cap; undefined = not capped @default the address */
  addressOf?: ConnectionGuard['addressOf'];
}

export const CONNECTION_LIMITS: ConnectionLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 10_000,
  maxRequestsPerSocket: 1_000,
  maxConnectionsPerAddress: Number.POSITIVE_INFINITY,
};

/**
 * Applies `limits` to `server`. The idle timer is the socket's own inactivity timeout, but a
 * socket whose request is still being answered (a slow platform call) is left alone: only one
 * that carries no request is ended. Connections are capped per address, and idle ones shed first
 * when the process nears its descriptor limit (connection-guard.ts).
 */
function bound(server: Server, limits: ConnectionLimits): void {
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
  const busy = new WeakMap<Socket, number>();
  const guard = guardConnections(server, {
    maxConnectionsPerAddress: limits.maxConnectionsPerAddress,
    ...(limits.addressOf === undefined ? {} : { addressOf: limits.addressOf }),
  });
  server.on('connection', (socket: Socket) => {
    socket.setTimeout(limits.idleTimeoutMs, () => {
      if ((busy.get(socket) ?? 0) === 0) socket.destroy();
    });
  });
  server.on('request', (request, response) => {
    const socket = request.socket;
    busy.set(socket, (busy.get(socket) ?? 0) + 1);
    guard.busy(socket);
    response.once('close', () => {
      const left = (busy.get(socket) ?? 1) - 1;
      busy.set(socket, left);
      if (left === 0) guard.idle(socket);
    });
  });
}

export interface Listening {
  server: Server;
  /** `http://host:port`, an IPv6 host in brackets */
  url: string;
  port: number;
  /** stops accepting and ends every connection; resolves once the server is closed (again: the same promise) */
  close(): Promise<void>;
}

/** Listens on `hostname`:`port` (0 = any free port) within `limits`; rejects when the port is taken. */
export async function listen(listener: RequestListener, port: number, hostname: string, limits: Partial<ConnectionLimits> = {}): Promise<Listening> {
  const resolved = { ...CONNECTION_LIMITS, ...limits };
  // Deadlines are checked this often: a tenth of the shortest, so none overruns by much.
  const server = createServer({ connectionsCheckingInterval: Math.max(100, Math.min(resolved.headersTimeoutMs, resolved.requestTimeoutMs) / 10) }, listener);
  bound(server, resolved);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, hostname, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const actual = (server.address() as AddressInfo).port;
  const host = hostname.includes(':') ? `[${hostname}]` : hostname;
  let closing: Promise<void> | undefined;
  return {
    server,
    url: `http://${host}:${actual}`,
    port: actual,
    close: () =>
      (closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      })),
  };
}
