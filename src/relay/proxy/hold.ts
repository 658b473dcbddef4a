/**
 * The platform's "slow down": after an upstream 429 the proxy answers 429 itself for the
 * window the platform named, instead of spending more of the rate budget.
 */
import { isRateLimitBody } from '../../api/index.js';
import { ProxyError } from './errors.js';

/** When nothing better is known (no `try-in-seconds`, no `Retry-After`), hold for this long. */
const FALLBACK_SECONDS = 1;

/** Whole seconds to wait, from the 429 body's `try-in-seconds` or the upstream's `Retry-After`. */
export function retryAfterSeconds(body: string, header: string | null): number {
  let seconds = Number(header ?? NaN);
  try {
    const parsed: unknown = JSON.parse(body);
    if (isRateLimitBody(parsed)) seconds = parsed.error['try-in-seconds'];
  } catch {
    // not JSON: keep the header's value
  }
  return Number.isFinite(seconds) && seconds > 0 ? Math.ceil(seconds) : FALLBACK_SECONDS;
}

/** When calls may go upstream again (ms since epoch); one object may be shared by every caller of a platform. */
export interface Backoff {
  until: number;
}

export class RateHold {
  constructor(
    private readonly now: () => number,
    private readonly backoff: Backoff = { until: 0 },
  ) {}

  /** Holds calls for `seconds` from now (never shortens a longer hold already in force). */
  hold(seconds: number): void {
    this.backoff.until = Math.max(this.backoff.until, this.now() + seconds * 1000);
  }

  /** Milliseconds left in the hold, 0 when calls may go upstream. */
  remainingMs(): number {
    return Math.max(0, this.backoff.until - this.now());
  }

  /** Throws the relay's own 429 (with `Retry-After`) while a hold is in force. */
  check(): void {
    const ms = this.remainingMs();
    if (ms === 0) return;
    const seconds = Math.ceil(ms / 1000);
    throw new ProxyError(
      429,
      'rate_limited',
      `the platform asked to slow down; the relay holds calls for ${seconds} more second(s): retry after the Retry-After header`,
      { retryAfter: seconds },
    );
  }
}
