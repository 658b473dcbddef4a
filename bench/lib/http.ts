/** Small node:http pieces the benches' mock servers share. */
import type { createServer, IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Listens on a free loopback port; resolves to the port. */
export const listen = (server: ReturnType<typeof createServer>): Promise<number> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

/** The whole request body as UTF-8 text. */
export async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}
