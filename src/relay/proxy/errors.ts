/** The proxy's refusals, mapped to the relay's error body in one place. */
import { relayError } from '../../api/index.js';

/** JSON response with `Cache-Control: no-store` (nothing the proxy answers may sit in a shared cache). */
export function jsonResponse(body: unknown, status: number, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers },
  });
}

export interface ProxyErrorOptions {
  /** `details` of the error body, e.g. validation issues `{path, message}` */
  details?: unknown[];
  /** seconds; sets `Retry-After` (and `try-in-seconds` in the body) */
  retryAfter?: number;
  headers?: Record<string, string>;
  cause?: unknown;
}

/**
 * A call the proxy refuses or cannot complete: becomes `{"error":{"code","message","details"}}`
 * with `status`.
 *
 * @example
 * throw new ProxyError(403, 'forbidden', 'token "crm-sync" lacks the delete scope needed by person/delete');
 */
export class ProxyError extends Error {
  override name = 'ProxyError' as const;
  readonly details: unknown[];
  readonly retryAfter: number | undefined;
  readonly headers: Record<string, string>;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options: ProxyErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.details = options.details ?? [];
    this.retryAfter = options.retryAfter;
    this.headers = options.headers ?? {};
  }

  toResponse(): Response {
    const { error } = relayError(this.code, this.message, this.details);
    if (this.retryAfter === undefined) return jsonResponse({ error }, this.status, this.headers);
    // `try-in-seconds` as well, so clients written for the platform's 429 body back off too.
    return jsonResponse({ error: { ...error, 'try-in-seconds': this.retryAfter } }, this.status, { ...this.headers, 'retry-after': String(this.retryAfter) });
  }
}
