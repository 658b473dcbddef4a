/**
 * How long to wait after a failed send: exponential with jitter, never shorter than the
 * relay's `Retry-After`.
 * @module
 */

/** First and longest wait, in ms. */
export const BACKOFF_BASE = 1000;
export const BACKOFF_MAX = 300_000;

/**
 * The wait after the `attempt`-th failure in a row (from 1): half to all of 1 s, 2 s, 4 s, …
 * capped at 5 min, and at least `retryAfter` ms.
 * @example backoff(3, 0, Math.random) // between 2000 and 4000
 */
export const backoff = (attempt: number, retryAfter: number, random: () => number): number =>
  Math.max(retryAfter, Math.min(BACKOFF_MAX, BACKOFF_BASE * 2 ** (attempt - 1)) * (0.5 + random() / 2));

/**
 * `Retry-After` in ms: a number of seconds (`0` included) or an HTTP date; 0 when absent or
 * unreadable. Read like `retryAfterSeconds` of src/api/retry.ts, which the bundle cannot import.
 */
export function retryAfter(header: string | null | undefined, now: number): number {
  // Absent or blank is 0 s already: Number(null), Number('') and Number(' ') are 0.
  const seconds = Number(header);
  if (seconds >= 0) return seconds * 1000;
  return Math.max(0, Date.parse(header as string) - now) || 0;
}
