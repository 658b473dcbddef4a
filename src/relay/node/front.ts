/**
 * The Node entry's HTTP front. POST /collect, the hot path, and the proxy's calls under `/v1`
 * are answered straight from node:http: the body read once into a buffer, the answer written
 * once (a large platform answer streamed through), no WHATWG `Request`, `Headers` or `Response`
 * built. Everything else (preflight, the snippet, health, metrics) goes to the Hono app through
 * @hono/node-server, as on every other runtime.
 * @module
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { pipeline, Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { getRequestListener } from '@hono/node-server';
import { relayError } from '../../api/index.js';
import type { RelayHandlers } from '../app.js';
import { resolveClientIp } from '../core/client-ip.js';
import type { CollectRequest } from '../ingest/body.js';
import type { RelayConfig } from '../core/config.js';
import { describeError, type HttpAnswer } from '../core/errors.js';
import { scrubLine } from '../core/logging.js';
import { decode, tooLarge } from '../core/request-body.js';
import type { ProxyRequest } from '../proxy/index.js';

/** The body as text and its size, refused (413) as soon as more than `limit` bytes are declared or arrive. */
function readIncoming(incoming: IncomingMessage, limit: number): Promise<{ text: string; size: number }> {
  const declared = Number(incoming.headers['content-length'] ?? Number.NaN);
  if (declared > limit) return Promise.reject(tooLarge(limit, declared));
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
        // A body that came in one chunk (most) is decoded where it lies, not copied first.
        resolve(decode(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size)));
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

/**
 * Writes `answer`; a streamed body is piped through as it arrives. `pipeline` ends both sides
 * together: a platform that breaks off mid-answer closes the caller's connection (a cut answer,
 * never one that looks whole), and a caller that hangs up cancels the platform's answer, so its
 * connection goes back to the pool instead of staying held by a body nobody reads.
 */
function write(outgoing: ServerResponse, answer: HttpAnswer): void {
  const { body } = answer;
  const { status } = answer;
  // A whole body goes with its length (one write of head and body, no chunked framing); a 204 or 304 has none.
  if ((typeof body === 'string' || body instanceof Uint8Array) && status >= 200 && status !== 204 && status !== 304) {
    const length = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
    return void outgoing.writeHead(status, { ...answer.headers, 'Content-Length': String(length) }).end(body);
  }
  outgoing.writeHead(status, answer.headers);
  if (body === null || typeof body === 'string' || body instanceof Uint8Array) return void outgoing.end(body ?? undefined);
  pipeline(Readable.fromWeb(body as NodeReadableStream<Uint8Array>), outgoing, () => {});
}

/** The answer to a call that failed where no answer was expected to fail: a bug, said with its stack. */
function failed(outgoing: ServerResponse, what: string, error: unknown): void {
  console.error(`cdp-edge relay: ${what} failed unexpectedly`, scrubLine(describeError(error)));
  if (outgoing.headersSent) return void outgoing.destroy();
  outgoing.writeHead(500, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
  outgoing.end(JSON.stringify(relayError('internal_error', 'The relay failed unexpectedly; nothing was lost, retry later.')));
}

/**
 * Calls under `/v1` (the proxy) whose path is plain: letters, digits, `_`, `-` and slashes, as
 * every endpoint's path is. Anything else (dots, escapes, backslashes) and HEAD go through Hono,
 * which normalises or refuses such a target exactly as on every other runtime.
 */
const isProxyCall = (method: string | undefined, path: string) => method !== 'HEAD' && /^\/v1(?:\/[\w-]*)*$/.test(path);

/** A node:http listener serving POST `config.collectPath` itself and everything else through Hono. */
export function createNodeFront(handlers: RelayHandlers, config: Pick<RelayConfig, 'collectPath' | 'trustProxy'>): RequestListener {
  const viaHono = getRequestListener(handlers.app.fetch);
  return (incoming: IncomingMessage, outgoing: ServerResponse) => {
    const url = incoming.url ?? '/';
    const mark = url.indexOf('?');
    const path = mark === -1 ? url : url.slice(0, mark);
    if (isProxyCall(incoming.method, path)) {
      const request: ProxyRequest = {
        method: incoming.method ?? 'GET',
        path,
        query: mark === -1 ? '' : url.slice(mark + 1),
        header: (name) => header(incoming, name),
        read: (limit) => readIncoming(incoming, limit),
      };
      handlers.proxy(request).then(
        (answer) => write(outgoing, answer),
        (error: unknown) => failed(outgoing, `${request.method} ${path}`, error),
      );
      return;
    }
    if (incoming.method !== 'POST' || path !== config.collectPath) return void viaHono(incoming, outgoing);
    const request: CollectRequest = {
      origin: header(incoming, 'origin'),
      contentType: header(incoming, 'content-type'),
      contentLength: header(incoming, 'content-length'),
      read: (limit) => readIncoming(incoming, limit),
    };
    const ip = resolveClientIp(incoming.socket.remoteAddress, header(incoming, 'x-forwarded-for'), config.trustProxy);
    handlers.collect(request, { ip }).then(
      (answer) => write(outgoing, answer),
      // answerCollect maps every failure to an answer; reaching here is a bug.
      (error: unknown) => failed(outgoing, 'POST /collect', error),
    );
  };
}
