/**
 * One HTTP call to the platform through ky: headers, timeout, retries and typed errors.
 * 429 waits the body's `try-in-seconds` (the platform sends no `Retry-After`; the relay does);
 * 5xx and network errors back off exponentially with full jitter; other 4xx are never retried.
 */
import ky, { isHTTPError, isNetworkError, isTimeoutError, type KyInstance } from 'ky';
import type { Endpoint } from '../api/index.js';
import { CdpError } from './errors/cdp-error.js';
import { HTTPError } from './errors/http-error.js';
import { NetworkError } from './errors/network-error.js';
import { RateLimitError } from './errors/rate-limit-error.js';
import { TimeoutError } from './errors/timeout-error.js';
import type { ResolvedOptions } from './options.js';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/** Seconds to wait from a 429: the body's `try-in-seconds`, else `Retry-After`, else 1. */
export function tryInSeconds(body: unknown, headers?: Headers): number {
  const fromBody = isObject(body) && isObject(body['error']) ? Number(body['error']['try-in-seconds']) : NaN;
  if (Number.isFinite(fromBody) && fromBody >= 0) return fromBody;
  const fromHeader = Number(headers?.get('retry-after'));
  return Number.isFinite(fromHeader) && fromHeader >= 0 ? fromHeader : 1;
}

export function createTransport(options: ResolvedOptions): KyInstance {
  const { retry } = options;
  return ky.create({
    baseUrl: `${options.baseUrl}/`,
    headers: options.headers,
    fetch: options.fetch,
    timeout: options.timeout,
    retry: {
      limit: retry.limit,
      methods: ['get', 'post', 'put', 'delete'],
      statusCodes: [500, 502, 503, 504],
      afterStatusCodes: [503],
      backoffLimit: retry.backoffLimit,
      jitter: true,
    },
    hooks: {
      afterResponse: [
        async ({ response, retryCount }) => {
          if (response.status !== 429 || retryCount >= retry.limit) return;
          const body: unknown = await response
            .clone()
            .json()
            .catch(() => undefined);
          const seconds = tryInSeconds(body, response.headers);
          if (seconds > retry.maxTryInSeconds) return;
          return ky.retry({ delay: seconds * 1000, code: 'RATE_LIMIT' });
        },
      ],
    },
  });
}

/** Sends `body` to `endpoint`; resolves to the parsed JSON, or throws one of the client's errors. */
export async function send<T>(http: KyInstance, options: ResolvedOptions, endpoint: Endpoint, body: unknown): Promise<T> {
  const url = `${options.baseUrl}${endpoint.path}`;
  try {
    return await http(endpoint.path.slice(1), { method: endpoint.method, json: body ?? {} }).json<T>();
  } catch (error) {
    throw toClientError(error, endpoint.method, url, options.timeout);
  }
}

function toClientError(error: unknown, method: string, url: string, timeout: number): Error {
  if (isHTTPError(error)) {
    const init = { method, url, status: error.response.status, body: error.data, cause: error };
    return error.response.status === 429
      ? new RateLimitError({ ...init, tryInSeconds: tryInSeconds(error.data, error.response.headers) })
      : new HTTPError(init);
  }
  if (isTimeoutError(error)) return new TimeoutError(method, url, timeout, error);
  if (isNetworkError(error)) return new NetworkError(method, url, error.cause ?? error);
  // A 2xx whose body is not JSON: the base address points at something that is not the platform.
  if (error instanceof SyntaxError) return new CdpError(`${method} ${url} answered with a body that is not JSON; check baseUrl`, { cause: error });
  if (error instanceof CdpError) return error;
  // Anything else was thrown by fetch itself: Node throws TypeError('fetch failed'), workerd a
  // plain Error('Network connection lost'). Either way no answer arrived.
  return new NetworkError(method, url, error);
}
