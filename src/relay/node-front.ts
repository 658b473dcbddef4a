/**
 * The Node entry's HTTP front. POST /collect, the hot path, is answered straight from
 * node:http: its body read once into a buffer, its answer written once, no WHATWG `Request`,
 * `Headers` or `Response` built. Everything else (preflight, the proxy, the snippet, health)
 * goes to the Hono app through @hono/node-server, as on every other runtime.
 * @module
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { relayError } from '../api/index.js';
import type { RelayHandlers } from './app.js';
import { resolveClientIp } from './client-ip.js';
import type { CollectRequest } from './collect/body.js';
import type { RelayConfig } from './config.js';
import { RelayHttpError } from './errors.js';
import { decode } from './proxy/body.js';

const tooLarge = (limit: number) => new RelayHttpError(413, 'payload_too_large', `request body is over the ${limit}-byte limit`);

/** The body as text and its size, refused (413) as soon as more than `limit` bytes are declared or arrive. */
function readIncoming(incoming: IncomingMessage, limit: number): Promise<{ text: string; size: number }> {
  const declared = Number(incoming.headers['content-length'] ?? Number.NaN);
  if (declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size <= limit) return void parts.push(chunk);
      // Past the limit: stop keeping it (node:http discards the rest once the answer is sent).
      incoming.off('data', onData);
      reject(tooLarge(limit));
    };
    incoming.on('data', onData);
    incoming.once('end', () => {
      try {
        resolve(decode(Buffer.concat(parts, size)));
      } catch (notText) {
        reject(notText);
      }
    });
    incoming.once('error', reject);
    incoming.once('close', () => {
      if (!incoming.complete) reject(new Error('the client closed the connection before the body ended'));
    });
  });
}

const header = (incoming: IncomingMessage, name: string): string | undefined => {
  const value = incoming.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

/** A node:http listener serving POST `config.collectPath` itself and everything else through Hono. */
export function createNodeFront(handlers: RelayHandlers, config: Pick<RelayConfig, 'collectPath' | 'trustProxy'>): RequestListener {
  const viaHono = getRequestListener(handlers.app.fetch);
  return (incoming: IncomingMessage, outgoing: ServerResponse) => {
    const url = incoming.url ?? '/';
    const mark = url.indexOf('?');
    const path = mark === -1 ? url : url.slice(0, mark);
    if (incoming.method !== 'POST' || path !== config.collectPath) return void viaHono(incoming, outgoing);
    const request: CollectRequest = {
      origin: header(incoming, 'origin'),
      contentType: header(incoming, 'content-type'),
      contentLength: header(incoming, 'content-length'),
      read: (limit) => readIncoming(incoming, limit),
    };
    const ip = resolveClientIp(incoming.socket.remoteAddress, header(incoming, 'x-forwarded-for'), config.trustProxy);
    handlers.collect(request, { ip }).then(
      (answer) => {
        outgoing.writeHead(answer.status, answer.headers);
        outgoing.end(answer.body);
      },
      (error: unknown) => {
        // answerCollect maps every failure to an answer; reaching here is a bug: say so with its stack.
        console.error('cdp-edge relay: POST /collect failed unexpectedly', error);
        if (outgoing.headersSent) return void outgoing.destroy();
        outgoing.writeHead(500, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
        outgoing.end(JSON.stringify(relayError('internal_error', 'The relay failed unexpectedly; nothing was lost, retry later.')));
      },
    );
  };
}
