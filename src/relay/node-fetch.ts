/**
 * A `fetch` for the relay's upstream calls on Node (`/collect` and the proxy), on undici's `request` with a keep-alive pool.
 * Node's global `fetch` (undici's WHATWG layer) costs more per call than the whole proxy around
 * it; the relay's Node entry passes this one as `fetch` instead. Never imported by the Worker build.
 *
 * @example
 * createProxyRoutes({ tokens, upstream, fetch: createNodeFetch() })
 * @module
 */
import { Agent, request } from 'undici';
import type { IncomingHttpHeaders } from 'undici/types/header.js';
import { RAW_ANSWER, type WithRawAnswer } from './proxy/raw-answer.js';

export interface NodeFetchOptions {
  /** connections per upstream origin @default 64 */
  maxSockets?: number;
}

/** Answers up to this size are collected whole (the proxy would read them whole anyway). */
const SMALL_BODY = 64 * 1024;

const bodyless = (status: number, method: string) => method === 'HEAD' || status === 204 || status === 304;

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

/** Hop-by-hop headers describe the connection to the platform, not the answer: never passed on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authenticate', 'proxy-authorization']);

const toPairs = (headers: IncomingHttpHeaders): [string, string][] =>
  Object.entries(headers).flatMap(([name, value]) =>
    value === undefined || HOP_BY_HOP.has(name)
      ? []
      : Array.isArray(value)
        ? value.map((one): [string, string] => [name, one])
        : [[name, value] as [string, string]],
  );

/** Reads up to 64 kB; past that, a stream that replays what was read and then the rest. */
async function collect(body: AsyncIterable<Buffer>): Promise<Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array>> {
  const iterator = body[Symbol.asyncIterator]();
  const parts: Buffer[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await iterator.next();
    if (done) return new Uint8Array(Buffer.concat(parts, size));
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

/**
 * `fetch` for calls to the platform: a URL (or a Request, as ky sends), a method, headers, a
 * string or byte body and optionally a signal; large answers stream, small ones arrive whole.
 * Redirects are never followed (the platform sends none, and following one could leak the key).
 */
export function createNodeFetch(options: NodeFetchOptions = {}): typeof fetch {
  const dispatcher = new Agent({ connections: options.maxSockets ?? 64, keepAliveTimeout: 10_000 });
  const nodeFetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    if (input instanceof Request) {
      // What ky and other clients send: read the Request into the URL + init form below.
      const body = input.method === 'GET' || input.method === 'HEAD' ? undefined : await new Request(input, init).text();
      const rest: RequestInit = { ...init };
      delete rest.body;
      return nodeFetch(input.url, { method: input.method, headers: input.headers, signal: input.signal, ...rest, ...(body === undefined ? {} : { body }) });
    }
    const url = String(input);
    if (!/^https?:\/\//.test(url)) throw new TypeError(`createNodeFetch: only http and https URLs; got ${url.slice(0, 40)}`);
    const method = (init.method ?? 'GET').toUpperCase();
    const body = typeof init.body === 'string' ? init.body : init.body instanceof Uint8Array ? init.body : undefined;
    if (init.body != null && body === undefined) throw new TypeError('createNodeFetch: the body must be a string or bytes');
    const headers: Record<string, string> = {};
    if (init.headers instanceof Headers || Array.isArray(init.headers)) new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    else Object.assign(headers, init.headers);
    const answer = await request(url, { method: method as 'GET', headers, body: body ?? null, dispatcher, signal: init.signal ?? null });
    const status = answer.statusCode;
    const responseInit = { status, headers: toPairs(answer.headers) };
    if (bodyless(status, method)) {
      await answer.body.dump();
      return new Response(null, responseInit);
    }
    const collected = await collect(answer.body);
    if (collected instanceof ReadableStream) return new Response(collected, responseInit);
    const response: WithRawAnswer = new Response(collected, responseInit);
    response[RAW_ANSWER] = { bytes: collected, contentType: header(answer.headers, 'content-type'), retryAfter: header(answer.headers, 'retry-after') };
    return response;
  };
  return nodeFetch as typeof fetch;
}
