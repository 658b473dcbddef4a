/**
 * The one place that talks to the platform. The request is built from scratch: the fixed
 * path of the endpoint table, the platform key and a JSON body. Nothing of the caller's
 * request (credentials, cookies, hop-by-hop or X-Forwarded-* headers, query, path) is copied.
 */
import { ENDPOINT_LIST, type Endpoint, type EndpointId } from '../../api/index.js';
import { ProxyError } from './errors.js';
import { retryAfterSeconds, type RateHold } from './hold.js';
import type { ProxyConfig } from './options.js';
import { RAW_ANSWER, type WithRawAnswer } from './raw-answer.js';

/** Sends `body` to the platform for `endpoint`; resolves once response headers arrive. */
export type Upstream = (endpoint: Endpoint<EndpointId>, body: string) => Promise<Response>;

const TIMED_OUT = Symbol('timed out');

export function createUpstream(config: ProxyConfig, hold: RateHold): Upstream {
  const urls = new Map(ENDPOINT_LIST.map((endpoint) => [endpoint.id, `${config.baseUrl}${endpoint.path}`]));
  const headers = { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': config.apiKey };
  return async (endpoint, body) => {
    let sent: Promise<Response>;
    try {
      // redirect 'manual': fetch keeps custom headers across origins, so following one could hand the key elsewhere.
      sent = config.fetch(urls.get(endpoint.id) as string, { method: endpoint.method, headers, body, redirect: 'manual' });
    } catch (cause) {
      sent = Promise.reject(cause);
    }
    // A timer race rather than an AbortSignal: signals cost more per call than the rest of the
    // upstream call on Node, and a late answer is simply dropped.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(TIMED_OUT), config.timeoutMs);
    });
    let response: Response;
    try {
      response = await Promise.race([sent, late]);
    } catch (cause) {
      if (cause === TIMED_OUT) {
        sent
          .then(
            (answer) => answer.body?.cancel(),
            () => undefined,
          )
          .catch(() => undefined);
        throw new ProxyError(504, 'upstream_timeout', `the platform did not answer ${endpoint.id} within ${config.timeoutMs} ms; retry later`);
      }
      throw new ProxyError(502, 'upstream_unreachable', `the platform could not be reached for ${endpoint.id}; retry later`, { cause });
    } finally {
      // Only the wait for headers is bounded: a large page may take longer to stream.
      clearTimeout(timer);
    }
    if (response.status !== 429) return response;
    // A 429 body is a few bytes (`try-in-seconds` is in it): read it, hold, and pass it on.
    const text = await response.text();
    const seconds = retryAfterSeconds(text, response.headers.get('retry-after'));
    hold.hold(seconds);
    return new Response(text, {
      status: 429,
      headers: { 'content-type': response.headers.get('content-type') ?? 'application/json', 'retry-after': String(seconds) },
    });
  };
}

/** Answers up to this size are read whole before answering: one write instead of a stream. */
const SMALL_BODY = 64 * 1024;

/**
 * The platform's answer for the caller: its status, body and Content-Type, plus
 * `Cache-Control: no-store`; `Retry-After` on a 429. Bodies larger than 64 kB, or of unknown
 * length, are streamed through as they arrive, never buffered.
 */
export async function passThrough(response: Response): Promise<Response> {
  if (response.status < 200 || (response.status >= 300 && response.status < 400) || response.status > 599) {
    // 1xx cannot be a final answer and a 3xx would point the caller somewhere we never vetted.
    void response.body?.cancel().catch(() => undefined);
    throw new ProxyError(502, 'upstream_bad_response', `the platform answered with status ${response.status}, which the relay does not pass on`);
  }
  const raw = (response as WithRawAnswer)[RAW_ANSWER];
  const type = raw ? raw.contentType : (response.headers.get('content-type') ?? undefined);
  const retryAfter = raw ? raw.retryAfter : (response.headers.get('retry-after') ?? undefined);
  // A plain object and a byte array: the shapes @hono/node-server writes in a single call.
  const headers: Record<string, string> = { 'cache-control': 'no-store' };
  if (type !== undefined) headers['content-type'] = type;
  if (response.status === 429 && retryAfter !== undefined) headers['retry-after'] = retryAfter;
  let body: Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> | null = raw?.bytes ?? null;
  if (raw === undefined) {
    const length = Number(response.headers.get('content-length') ?? NaN);
    body = length <= SMALL_BODY ? new Uint8Array(await response.arrayBuffer()) : response.body;
  }
  return new Response(body, { status: response.status, headers });
}
