/**
 * One HTTP call to the platform through ky: headers, timeout, retries and typed errors.
 *
 * What is retried depends on whether the failure says the platform did not apply the call:
 * - not applied (every endpoint retries): a 429 (waits the body's `try-in-seconds`), a 503, a
 *   connection that was never made (refused, unknown host, connect timeout);
 * - ambiguous (only idempotent endpoints retry; the others throw MaybeAppliedError): a timeout,
 *   a connection lost after the request went out, a 500, 502 or 504;
 * - refused (never retried): every other 4xx.
 * Retries back off exponentially with full jitter. `Endpoint.idempotent` (src/api) says which
 * endpoints are idempotent.
 */
import ky, { isHTTPError, isNetworkError, isTimeoutError, type KyInstance } from 'ky';
import type { Endpoint } from '../api/index.js';
import { tryInSeconds, wasNotSent } from '../api/retry.js';
import { CdpError } from './errors/cdp-error.js';
import { HTTPError } from './errors/http-error.js';
import { MaybeAppliedError } from './errors/maybe-applied-error.js';
import { NetworkError } from './errors/network-error.js';
import { RateLimitError } from './errors/rate-limit-error.js';
import { TimeoutError } from './errors/timeout-error.js';
import type { ResolvedOptions } from './options.js';

/** Error codes of a connection that was never made: the request cannot have reached the platform. */
/** What a failure says about the call: `unapplied` (safe to send again), `ambiguous`, or `final` (refused: do not retry). */
export function classifyFailure(error: unknown): 'unapplied' | 'ambiguous' | 'final' {
  if (isHTTPError(error)) {
    const { status } = error.response;
    if (status === 429 || status === 503) return 'unapplied';
    return status === 500 || status === 502 || status === 504 ? 'ambiguous' : 'final';
  }
  if (isTimeoutError(error)) return 'ambiguous';
  if (isNetworkError(error) || !(error instanceof SyntaxError)) return wasNotSent(error) ? 'unapplied' : 'ambiguous';
  return 'final';
}

/** Seconds to wait from a 429: the body's `try-in-seconds`, else `Retry-After`, else 1. */
const waitOf = (body: unknown, headers: Headers): number => tryInSeconds(body, headers.get('retry-after'), Date.now());

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
          const seconds = waitOf(body, response.headers);
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
    return await http(endpoint.path.slice(1), {
      method: endpoint.method,
      json: body ?? {},
      retry: {
        // 429 is waited out by the afterResponse hook; the rest by what the failure says about the call.
        shouldRetry: ({ error }) => {
          const kind = isHTTPError(error) && error.response.status === 429 ? 'final' : classifyFailure(error);
          return kind === 'unapplied' || (kind === 'ambiguous' && endpoint.idempotent);
        },
      },
    }).json<T>();
  } catch (error) {
    const failure = toClientError(error, endpoint.method, url, options.timeout);
    if (!endpoint.idempotent && !(failure instanceof RateLimitError) && classifyFailure(error) === 'ambiguous')
      throw new MaybeAppliedError(endpoint.id, failure);
    throw failure;
  }
}

function toClientError(error: unknown, method: string, url: string, timeout: number): Error {
  if (isHTTPError(error)) {
    const init = { method, url, status: error.response.status, body: error.data, cause: error };
    return error.response.status === 429 ? new RateLimitError({ ...init, tryInSeconds: waitOf(error.data, error.response.headers) }) : new HTTPError(init);
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
