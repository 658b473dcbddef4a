/**
 * When the next flush runs: one timer, never sooner than a running backoff allows.
 * @module
 */
import { backoff } from './backoff.js';

export interface Scheduler {
  /** Runs the task in `ms` (at the earliest when the backoff ends), unless it is due sooner already. */
  plan(ms: number): void;
  /** Forgets the planned run (the task is running now). */
  cancel(): void;
  /**
   * Backs off after a failed send; returns the wait in ms. `retryAfterMs` (the answer's
   * `Retry-After`) is the wait when there is one: the relay knows when it takes more (its rate
   * limit, its outbox), and such a wait does not count toward the doubling. Without one, the wait
   * doubles with each failure in a row (backoff.ts).
   */
  failed(retryAfterMs: number): number;
  /** Ends the backoff after a send that went through, or when the browser comes back online. */
  succeeded(): void;
}

export function createScheduler(task: () => void, now: () => number, random: () => number): Scheduler {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let dueAt = 0;
  let failures = 0;
  let pausedUntil = 0;
  return {
    plan(ms) {
      const at = Math.max(now() + ms, pausedUntil);
      if (timer && dueAt <= at) return;
      clearTimeout(timer);
      dueAt = at;
      timer = setTimeout(task, at - now());
    },
    cancel() {
      clearTimeout(timer);
      timer = undefined;
    },
    failed(retryAfterMs) {
      const wait = retryAfterMs || backoff(++failures, random);
      pausedUntil = now() + wait;
      return wait;
    },
    succeeded() {
      failures = 0;
      pausedUntil = 0;
    },
  };
}
