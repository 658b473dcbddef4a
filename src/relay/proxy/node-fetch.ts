/**
 * A `fetch` for the proxy's upstream calls on Node, on node:http(s) with keep-alive sockets.
 * Node's global `fetch` (undici) costs more per call than the whole proxy around it; the
 * relay's Node entry passes this one as `fetch` instead. Never imported by the Worker build.
 *
 * @example
 * createProxyRoutes({ tokens, upstream, fetch: createNodeFetch() })
 * @module
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import { RAW_ANSWER, type WithRawAnswer } from './raw-answer.js';

interface Target {
  secure: boolean;
  hostname: string;
  port: string;
  path: string;
}

export interface NodeFetchOptions {
  /** sockets per upstream host @default 64 */
  maxSockets?: number;
}

/** Header pairs as received (a plain list: building a Headers object per call costs on Node). */
const toPairs = (raw: string[]): [string, string][] => {
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i]!, raw[i + 1]!]);
  return pairs;
};

const header = (res: IncomingMessage, name: string): string | undefined => {
  const value = res.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

/** Answers up to this size are collected whole (the proxy would read them whole anyway). */
const SMALL_BODY = 64 * 1024;

const bodyless = (status: number, method: string) => method === 'HEAD' || status === 204 || status === 304;

/**
 * `fetch` for calls to the platform: a URL (or a Request, as ky sends), a method, headers, a
 * string or byte body and optionally a signal; large answers stream, small ones arrive whole.
 * Redirects are never followed (the platform sends none, and following one could leak the key).
 */
export function createNodeFetch(options: NodeFetchOptions = {}): typeof fetch {
  const maxSockets = options.maxSockets ?? 64;
  const http = new HttpAgent({ keepAlive: true, maxSockets });
  const https = new HttpsAgent({ keepAlive: true, maxSockets });
  // The proxy calls a few dozen fixed URLs: parse each once, not on every call.
  const targets = new Map<string, Target>();
  const target = (href: string): Target => {
    let found = targets.get(href);
    if (found === undefined) {
      const url = new URL(href);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`createNodeFetch: only http and https URLs; got ${url.protocol}`);
      found = { secure: url.protocol === 'https:', hostname: url.hostname.replace(/^\[|\]$/g, ''), port: url.port, path: `${url.pathname}${url.search}` };
      if (targets.size < 1000) targets.set(href, found);
    }
    return found;
  };
  const nodeFetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    if (input instanceof Request) {
      // What ky and other clients send: read the Request into the URL + init form below.
      const body = input.method === 'GET' || input.method === 'HEAD' ? undefined : await new Request(input, init).text();
      const rest: RequestInit = { ...init };
      delete rest.body;
      return nodeFetch(input.url, { method: input.method, headers: input.headers, signal: input.signal, ...rest, ...(body === undefined ? {} : { body }) });
    }
    const url = target(String(input));
    const method = (init.method ?? 'GET').toUpperCase();
    const body = typeof init.body === 'string' ? init.body : init.body instanceof Uint8Array ? Buffer.from(init.body) : undefined;
    if (init.body != null && body === undefined) throw new TypeError('createNodeFetch: the body must be a string or bytes');
    const headers: Record<string, string> = {};
    if (init.headers instanceof Headers || Array.isArray(init.headers)) new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    else Object.assign(headers, init.headers);
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const secure = url.secure;
    return new Promise<Response>((resolve, reject) => {
      const request = (secure ? httpsRequest : httpRequest)({ hostname: url.hostname, port: url.port, path: url.path, method, headers, agent: secure ? https : http, ...(init.signal ? { signal: init.signal } : {}) }, (res: IncomingMessage) => {
        const status = res.statusCode ?? 502;
        const init = { status, statusText: res.statusMessage ?? '', headers: toPairs(res.rawHeaders) };
        if (bodyless(status, method)) {
          res.resume();
          resolve(new Response(null, init));
          return;
        }
        // Collect up to 64 kB: a small answer becomes one byte array (a web stream costs more than
        // it does); past that, what arrived is replayed and the rest streams through unbuffered.
        const parts: Buffer[] = [];
        let size = 0;
        const onData = (part: Buffer) => {
          parts.push(part);
          size += part.byteLength;
          if (size <= SMALL_BODY) return;
          res.off('data', onData).off('end', onEnd);
          res.pause();
          const rest = (Readable.toWeb(res) as ReadableStream<Uint8Array>).getReader();
          let replayed = 0;
          const stream = new ReadableStream<Uint8Array>({
            async pull(controller) {
              const buffered = parts[replayed];
              if (buffered !== undefined) {
                replayed += 1;
                return controller.enqueue(new Uint8Array(buffered));
              }
              const { done, value } = await rest.read();
              if (done) controller.close();
              else controller.enqueue(value);
            },
            cancel: (reason) => rest.cancel(reason),
          });
          resolve(new Response(stream, init));
        };
        const onEnd = () => {
          const all = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
          const bytes = new Uint8Array(all.buffer, all.byteOffset, all.byteLength) as Uint8Array<ArrayBuffer>;
          // The whole body is here: its length is known and it is no longer chunked.
          init.headers = init.headers.filter(([name]) => !/^(content-length|transfer-encoding)$/i.test(name));
          init.headers.push(['content-length', String(bytes.byteLength)]);
          const response: WithRawAnswer = new Response(bytes, init);
          response[RAW_ANSWER] = { bytes, contentType: header(res, 'content-type'), retryAfter: header(res, 'retry-after') };
          resolve(response);
        };
        res.on('data', onData).on('end', onEnd).on('error', reject);
      });
      request.on('error', reject);
      request.end(body);
    });
  };
  return nodeFetch as typeof fetch;
}
