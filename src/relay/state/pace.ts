/**
 * The pacing rule of every pacer, and the platform's default rate. Memory, SQLite and the
 * Workers pacer object run this function; Redis's script (state/redis-outbox.ts) is the same
 * rule in Lua.
 * @module
 */

/**
 * The pacing rule every store implements (GCRA): calls are spaced `1000 / rate` ms apart. `tat`
 * is the theoretical arrival time of the next call; a deliver call is granted once it has come,
 * a proxy call always (pushing `tat` on, into debt the deliverer then waits out); nothing before
 * `hold`. Pure, so the SQLite store runs the same code inside its transaction.
 */
export function pace(state: { tat: number; hold: number }, now: number, priority: 'proxy' | 'deliver', intervalMs: number): number {
  if (now < state.hold) return Math.ceil(state.hold - now);
  if (priority === 'deliver' && state.tat > now) return Math.ceil(state.tat - now);
  state.tat = Math.max(state.tat, now) + intervalMs;
  return 0;
}

/** The platform's default budget: about 10 calls a second per API key (professional plan). */
export const DEFAULT_PLATFORM_RATE = 10;

/** Validates a pacer's rate (platform calls per second) and returns the spacing of calls in ms. */
export function paceInterval(rate: number): number {
  if (!(Number.isFinite(rate) && rate > 0)) throw new RangeError(`the platform rate must be a number of calls per second above 0, got ${rate}`);
  return 1000 / rate;
}
