/**
 * The Node transport: undici's pooled `request`, without the WHATWG `Request`/`Headers`/
 * `AbortSignal` objects Node's global `fetch` builds per call. undici's own header and body
 * timeouts end a call that outlives `timeoutMs` by destroying its socket, so a hung platform
 * never keeps a pooled connection (undici checks those timeouts on a coarse timer, so a call
 * may run up to about a second past `timeoutMs`). Never imported by the Worker build.
 *
 * @example
 * const relay = createRelay(config, { transport: createUndiciTransport() });
 * @module
 */
import { createRequire } from 'node:module';
import type { Agent as AgentType, Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'undici/types/header.js';
import { afterPoll, isBodyless, KEEP_ALIVE_MS, SMALL_BODY, UpstreamTimeout, type Transport, type TransportAnswer } from './transport.js';

export interface UndiciTransportOptions {
  /** connections per upstream origin @default 64 */
  connections?: number;
}

export interface UndiciTransport extends Transport {
  /** Closes the pool's sockets. */
  close(): Promise<void>;
}

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

/**
 * undici's pool and its `request`, from their own files: undici's index loads all of undici
 * (fetch, WebSocket, caches, mocks, …), 3.3 MB of live heap the relay never uses, for these two.
 * `request` is the function undici's index puts on every dispatcher (its `dispatcher.request`),
 * called on the pool. Loaded when a transport is made, not with the Node entry, whose own
 * transport is node:http's (node-http.ts): the two files are 2.2 MB of heap.
 */
const undiciFile = createRequire(import.meta.url);
const undici = () => ({
  Agent: undiciFile('undici/lib/dispatcher/agent.js') as typeof AgentType,
  request: undiciFile('undici/lib/api/api-request.js') as (this: Dispatcher, options: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>,
});

/** URLs whose origin and path are kept parsed, at most. */
const MAX_TARGETS = 64;

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** The bytes of `buffer` as a plain Uint8Array, not copied. */
const bytesOf = (buffer: Buffer<ArrayBuffer>): Uint8Array<ArrayBuffer> => new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);

/**
 * Reads up to 64 kB; past that, a stream that replays what was read and then the rest. An answer
 * that came in one chunk (a call's usual one) is that chunk's bytes, not copied: the socket's
 * reads are not reused.
 */
async function collect(body: AsyncIterable<Buffer<ArrayBuffer>>): Promise<Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array>> {
  const iterator = body[Symbol.asyncIterator]();
  const parts: Buffer<ArrayBuffer>[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await iterator.next();
    if (done) return parts.length === 1 ? bytesOf(parts[0]!) : bytesOf(Buffer.concat(parts, size));
    parts.push(value);
    size += value.byteLength;
    if (size > SMALL_BODY) break;
  }
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const buffered = parts.shift();
      if (buffered !== undefined) return controller.enqueue(new Uint8Array(buffered));
      const { done, value } = await iterator.next();
      if (done) controller.close();
      else controller.enqueue(new Uint8Array(value));
    },
    cancel: async (reason) => void (await iterator.return?.(reason)),
  });
}

export function createUndiciTransport(options: UndiciTransportOptions = {}): UndiciTransport {
  const { Agent, request } = undici();
  const dispatcher = new Agent({ connections: options.connections ?? 64, keepAliveTimeout: KEEP_ALIVE_MS });
  /** each URL's origin and path, parsed once: the caller's are a few fixed ones (caller.ts) */
  const targets = new Map<string, { origin: string; path: string }>();
  const targetOf = (url: string) => {
    let target = targets.get(url);
    if (target === undefined) {
      const { origin, pathname, search } = new URL(url);
      target = { origin, path: `${pathname}${search}` };
      if (targets.size >= MAX_TARGETS) targets.clear();
      targets.set(url, target);
    }
    return target;
  };
  const transport = async ({ method, url, headers, body, timeoutMs }: Parameters<Transport>[0]): Promise<TransportAnswer> => {
    try {
      const { origin, path } = targetOf(url);
      // A close of an idle pooled connection that has arrived is read before the call is handed to
      // the pool, which then makes a new connection instead of writing on the closed one.
      await new Promise<void>((resolve) => afterPoll(resolve));
      const answer = await request.call(dispatcher, {
        origin,
        path,
        method: method as 'POST',
        headers,
        body: body ?? null,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const result: TransportAnswer = {
        status: answer.statusCode,
        contentType: header(answer.headers, 'content-type'),
        retryAfter: header(answer.headers, 'retry-after'),
        body: null,
      };
      if (isBodyless(answer.statusCode, method)) await answer.body.dump();
      else result.body = await collect(answer.body);
      return result;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code === 'string' && TIMEOUT_CODES.has(code)) throw new UpstreamTimeout(`no answer within ${timeoutMs} ms`, { cause: error });
      throw error;
    }
  };
  return Object.assign(transport, { close: () => dispatcher.close() });
}
