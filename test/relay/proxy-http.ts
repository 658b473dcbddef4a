/** Serving a fetch handler on an ephemeral loopback port, for the proxy's Node tests. */
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';

export async function listen(fetch: (request: Request) => Response | Promise<Response>): Promise<{ url: string; close(): Promise<void> }> {
  const server = await new Promise<ServerType>((resolve) => {
    const started: ServerType = serve({ fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(started));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
