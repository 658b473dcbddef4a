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
 *
 * `catchUpMs` (deliver calls only): a deliverer that asks late keeps its place in the schedule, up
 * to that far behind, so the time lost to a late timer, a store write or a merge's answer awaited
 * is made up with calls granted at once, instead of lost for good. Only for a pacer whose deliver
 * calls all leave through one spacer (deliver/spacer.ts), which keeps every platform window to the
 * rate: the Node deliverer ({@link CATCH_UP_MS}); 0 where several deliver through it (Workers' shards).
 */
export function pace(state: { tat: number; hold: number }, now: number, priority: 'proxy' | 'deliver', intervalMs: number, catchUpMs = 0): number {
  if (now < state.hold) return Math.ceil(state.hold - now);
  if (priority === 'deliver' && state.tat > now) return Math.ceil(state.tat - now);
  state.tat = Math.max(state.tat, priority === 'deliver' ? now - catchUpMs : now) + intervalMs;
  return 0;
}

/**
 * How far behind its schedule the Node deliverer may catch up: one platform window. Its spacer
 * then keeps any window to the rate; a proxy call pushes the schedule on from now, as before.
 */
export const CATCH_UP_MS = 1_000;

/** The platform's default budget: about 10 calls a second per API key (professional plan). */
export const DEFAULT_PLATFORM_RATE = 10;

/** Validates a pacer's rate (platform calls per second) and returns the spacing of calls in ms. */
export function paceInterval(rate: number): number {
  if (!(Number.isFinite(rate) && rate > 0)) throw new RangeError(`the platform rate must be a number of calls per second above 0, got ${rate}`);
  return 1000 / rate;
}
