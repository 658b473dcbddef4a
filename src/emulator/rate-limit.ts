/**
 * Requests per second, as the platform limits a key (10 professional, 30 business): a fixed
 * one-second window. Over the limit the caller gets the platform's 429 body, whose
 * `try-in-seconds` is the wait until the window ends (at least 1).
 * @module
 */

export interface RateLimiter {
  /** undefined when the request may go ahead, else the seconds to wait */
  take(): number | undefined;
}

export function createRateLimiter(perSecond: number, now: () => number): RateLimiter {
  let windowStart = 0;
  let used = 0;
  return {
    take() {
      if (perSecond <= 0) return undefined;
      const t = now();
      if (t - windowStart >= 1000) {
        windowStart = t;
        used = 0;
      }
      if (used < perSecond) {
        used++;
        return undefined;
      }
      return Math.max(1, Math.ceil((windowStart + 1000 - t) / 1000));
    },
  };
}
