/**
 * The one place that talks to the platform. The request is built from scratch: the fixed
 * path of the endpoint table, the platform key and a JSON body. Nothing of the caller's
 * request (credentials, cookies, hop-by-hop or X-Forwarded-* headers, query, path) is copied.
 */
import { ENDPOINT_LIST, type Endpoint, type EndpointId } from '../../api/index.js';
import { ProxyError } from './errors.js';
import { retryAfterSeconds, type RateHold } from './hold.js';
import type { ProxyConfig } from './options.js';

/** Sends `body` to the platform for `endpoint`; resolves once response headers arrive. */
export type Upstream = (endpoint: Endpoint<EndpointId>, body: string) => Promise<Response>;

/** A 429 body is small; more than this is not a rate-limit answer worth reading whole. */
const MAX_429_BODY = 64 * 1024;

export function createUpstream(config: ProxyConfig, hold: RateHold): Upstream {
  const urls = new Map(ENDPOINT_LIST.map((endpoint) => [endpoint.id, `${config.baseUrl}${endpoint.path}`]));
  const headers = { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': config.apiKey };
  return async (endpoint, body) => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), config.timeoutMs);
    let response: Response;
    try {
      // redirect 'manual': fetch keeps custom headers across origins, so following one could hand the key elsewhere.
      response = await config.fetch(urls.get(endpoint.id) as string, { method: endpoint.method, headers, body, signal: controller.signal, redirect: 'manual' });
    } catch (cause) {
      if (controller.signal.aborted) {
        throw new ProxyError(504, 'upstream_timeout', `the platform did not answer ${endpoint.id} within ${config.timeoutMs} ms; retry later`, { cause });
      }
      throw new ProxyError(502, 'upstream_unreachable', `the platform could not be reached for ${endpoint.id}; retry later`, { cause });
    } finally {
      // Only the wait for headers is bounded: a large page may take longer to stream.
      clearTimeout(timer);
    }
    if (response.status !== 429) return response;
    const text = (await response.text()).slice(0, MAX_429_BODY);
    const seconds = retryAfterSeconds(text, response.headers.get('retry-after'));
    hold.hold(seconds);
    return new Response(text, { status: 429, headers: { 'content-type': response.headers.get('content-type') ?? 'application/json', 'retry-after': String(seconds) } });
  };
}

/**
 * The platform's answer for the caller: its status, body (streamed, not buffered) and
 * Content-Type, plus `Cache-Control: no-store`; `Retry-After` on a 429.
 */
export function passThrough(response: Response): Response {
  if (response.status < 200 || (response.status >= 300 && response.status < 400) || response.status > 599) {
    // 1xx cannot be a final answer and a 3xx would point the caller somewhere we never vetted.
    void response.body?.cancel().catch(() => undefined);
    throw new ProxyError(502, 'upstream_bad_response', `the platform answered with status ${response.status}, which the relay does not pass on`);
  }
  const headers = new Headers({ 'cache-control': 'no-store' });
  const type = response.headers.get('content-type');
  if (type !== null) headers.set('content-type', type);
  const retryAfter = response.headers.get('retry-after');
  if (response.status === 429 && retryAfter !== null) headers.set('retry-after', retryAfter);
  return new Response(response.body, { status: response.status, headers });
}
