/**
 * How long the platform (or a relay) asked a caller to wait: the one reader of a 429's
 * `try-in-seconds` body and of the `Retry-After` header, for the client and the relay.
 * @module
 */
import { isRecord } from './objects.js';

/**
 * Seconds from a `Retry-After` header: a number of seconds (`0` included) or an HTTP date;
 * `undefined` when absent or unreadable.
 * @example retryAfterSeconds('0', Date.now()) // 0
 */
export function retryAfterSeconds(header: string | null | undefined, now: number): number | undefined {
  if (header === null || header === undefined || header.trim() === '') return undefined;
  const trimmed = header.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed);
  // An HTTP date names its day and month ("Tue, 24 Nov 2026 12:00:30 GMT"); bare numbers with a sign are not dates.
  const date = /[a-z]/i.test(trimmed) ? Date.parse(trimmed) : Number.NaN;
  return Number.isFinite(date) ? Math.max(0, (date - now) / 1000) : undefined;
}

/**
 * Seconds to wait after a 429: the body's `error["try-in-seconds"]`, else the `Retry-After`
 * header, else `fallback`.
 * @example tryInSeconds({ error: { 'try-in-seconds': 3 } }, null, Date.now()) // 3
 */
export function tryInSeconds(body: unknown, header: string | null | undefined, now: number, fallback = 1): number {
  const error = isRecord(body) ? body['error'] : undefined;
  const fromBody = isRecord(error) ? Number(error['try-in-seconds']) : Number.NaN;
  if (Number.isFinite(fromBody) && fromBody >= 0) return fromBody;
  return retryAfterSeconds(header, now) ?? fallback;
}

/** Error codes that prove a request never left: nothing can have been applied. */
const NOT_SENT = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'RELAY_CONNECT_TIMEOUT',
  'RELAY_NOT_WRITTEN',
]);

/** True when `error` (or one of its causes) says the request was never sent: safe to send again. */
export function wasNotSent(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string' && NOT_SENT.has(code)) return true;
  }
  return false;
}
