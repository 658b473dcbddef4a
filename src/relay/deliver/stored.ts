/**
 * The writes that keep what the relay knows about a call (`sending` before it goes, `settle` after
 * its answer) are tried again with backoff while the lease lasts. A store blip (a Redis
 * reconnect, `SQLITE_BUSY`) after a 200 answer would otherwise leave the call's entries leased
 * with a started send: the next lease would take them for ambiguous and hold them as dead letters,
 * and an operator's `outbox retry` would send them twice.
 * @module
 */
import type { Clock } from '../core/clock.js';
import { describe } from './report.js';

/** The waits between tries of one write (ms): about 3.7 s in all, within the 2 s kept at a lease's end and the call's timeout before it. */
export const STORE_RETRY_MS = [50, 150, 500, 1_000, 2_000] as const;

const sleep = (ms: number) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    (timer as { unref?: () => void }).unref?.();
  });

/**
 * Runs `write` until it succeeds, waiting {@link STORE_RETRY_MS} between tries, but never past
 * `until` (the lease's end: after it, another lease may hold the entries). Each failure is logged
 * with its cause; the last one is thrown.
 */
export async function keepTrying<T>(
  write: () => Promise<T>,
  what: 'sending' | 'settle',
  until: number,
  clock: Clock,
  log: (line: Record<string, unknown>) => void,
): Promise<T> {
  for (let tried = 0; ; tried++) {
    try {
      return await write();
    } catch (error) {
      const wait = STORE_RETRY_MS[tried];
      const last = wait === undefined || clock.now() + wait >= until;
      log({ level: last ? 'error' : 'warn', error: 'store_write_failed', write: what, tries: tried + 1, cause: describe(error) });
      if (last) throw error;
      await sleep(wait);
    }
  }
}
