/**
 * Requests per second, as the platform limits a key (10 professional, 30 business): a fixed
 * one-second window. Over the limit the caller gets the platform's 429 body, whose
 * `try-in-seconds` is the wait until the window ends (at least 1). Like the platform, 15 bad
 * requests (400/401) within 15 s shut the caller out for 15 s. Loopback has one caller, so
 * the emulator keeps one budget.
 * @module
 */

export interface RateLimiter {
  /** undefined when the request may go ahead, else the seconds to wait */
  take(): number | undefined;
  /** counts an answer: bad ones (400, 401) lead to the 15-second ban */
  answered(status: number): void;
  /** how many bans began so far (tests prove a relay never gets its key shut out) */
  readonly bans: number;
}

const BAN = { bad: 15, windowMs: 15_000, banMs: 15_000 };

export function createRateLimiter(perSecond: number, now: () => number): RateLimiter {
  let windowStart = 0;
  let used = 0;
  let bad: number[] = [];
  let bannedUntil = 0;
  let bans = 0;
  return {
    get bans() {
      return bans;
    },
    take() {
      if (perSecond <= 0) return undefined;
      const t = now();
      if (t < bannedUntil) return Math.ceil((bannedUntil - t) / 1000);
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
    answered(status) {
      if (perSecond <= 0 || (status !== 400 && status !== 401)) return;
      const t = now();
      bad = bad.filter((at) => at > t - BAN.windowMs);
      bad.push(t);
      if (bad.length >= BAN.bad) {
        bannedUntil = t + BAN.banMs;
        bans++;
        bad = [];
      }
    },
  };
}
