/**
 * How long to wait after a failed send when the relay did not say when (no `Retry-After`):
 * exponential with jitter. When it did, the wait is its `Retry-After` (scheduler.ts).
 * @module
 */

/** First and longest wait, in ms. */
export const BACKOFF_BASE = 1000;
export const BACKOFF_MAX = 300_000;

/**
 * The wait after the `attempt`-th failure in a row (from 1) that came without a `Retry-After`:
 * half to all of 1 s, 2 s, 4 s, … capped at 5 min.
 * @example backoff(3, Math.random) // between 2000 and 4000
 */
export const backoff = (attempt: number, random: () => number): number => Math.min(BACKOFF_MAX, BACKOFF_BASE * 2 ** (attempt - 1)) * (0.5 + random() / 2);

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
