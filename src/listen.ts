/**
 * The Node servers' one way to listen and stop (relay, its metrics port, emulator, demo site):
 * resolves once listening, with the address to print; `close` stops accepting and ends every
 * connection, keep-alive ones included, so a stop never waits on an idle browser.
 * @module
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Listening {
  server: Server;
  /** `http://host:port`, an IPv6 host in brackets */
  url: string;
  port: number;
  /** stops accepting and ends every connection; resolves once the server is closed (again: the same promise) */
  close(): Promise<void>;
}

/** Listens on `hostname`:`port` (0 = any free port); rejects when the port is taken. */
export async function listen(listener: RequestListener, port: number, hostname: string): Promise<Listening> {
  const server = createServer(listener);
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
