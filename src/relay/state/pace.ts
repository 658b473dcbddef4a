/**
 * The pacing rule of every pacer, and the platform's default rate. Memory, SQLite and the
 * Workers pacer object run these functions; Redis's script (state/redis-pace-lua.ts) is the same
 * rule in Lua.
 * @module
 */
import { marginAt, type Margin, SEND_MARGIN, widen } from './margin.js';

export { SEND_MARGIN };

/** The platform's window: it counts a key's calls per second. */
export const PLATFORM_WINDOW_MS = 1_000;

/** The window a shared pacer counts calls over at the base margin: the platform's second and 3%. */
export const SHARED_WINDOW_MS = PLATFORM_WINDOW_MS * (1 + SEND_MARGIN);

/** A proxy call waits at most this long for its slot; past it, it is answered as held (nothing taken). */
export const MAX_PROXY_WAIT_MS = 2_000;

/**
 * A pacer's state: the schedule (`tat`), the platform's hold, the margin its 429s widened
 * (state/margin.ts), and for the shared window, when the calls of the last window went (or will),
 * sorted, and `pending`: the deliverer's last call counted ahead ({@link paceLeave}).
 */
export interface PaceState extends Margin {
  tat: number;
  hold: number;
  calls?: number[];
  pending?: number | undefined;
}

/** The window shared by proxy and deliver calls: at most `budget` calls in any `ms`. */
export interface SharedWindow {
  budget: number;
  ms: number;
}

/** The shared window of a pacer of `rate` calls a second, at the base margin ({@link sharedWindowAt} has the pacer's own). */
export const sharedWindow = (rate: number): SharedWindow => ({ budget: Math.max(1, Math.floor(rate)), ms: SHARED_WINDOW_MS });

/** `window` as the pacer's margin makes it at `now`: its budget over the platform's second and the margin (whole ms). */
export const sharedWindowAt = (state: Margin, now: number, window: SharedWindow): SharedWindow => ({
  budget: window.budget,
  ms: Math.max(window.ms, marginWindowMs(state, now)),
});

/** The platform's second and the pacer's margin at `now`, in whole ms. */
export const marginWindowMs = (state: Margin, now: number): number => Math.round(PLATFORM_WINDOW_MS * (1 + marginAt(state, now)));

/**
 * The platform answered a call 429 at `now`, asking for no call before `until`: every call is held
 * until then, and the first 429 of a hold widens the margin (state/margin.ts). The 429s of calls
 * already on their way when the first came are answered within its hold: one widening for them all.
 */
export function paceHold(state: PaceState, now: number, until: number): void {
  if (now >= state.hold) widen(state, now);
  state.hold = Math.max(state.hold, until);
}

/**
 * The pacing rule every store implements. Pure, so the SQLite store runs it inside its transaction.
 *
 * - `deliver` (a deliver call asks for a slot before its entries are marked `sending`): GCRA, calls
 *   spaced `intervalMs` apart; `tat` is the theoretical arrival time of the next call, granted once
 *   it has come. `catchUpMs`: a deliverer that asks late keeps its place in the schedule, up to that
 *   far behind, so the time lost to a late timer, a store write or a merge's answer awaited is made
 *   up with calls granted at once, instead of lost for good. Only for a pacer whose deliver calls all
 *   leave through one spacer (deliver/spacer.ts) and the shared window ({@link paceLeave}): the Node
 *   deliverer ({@link CATCH_UP_MS}); 0 where several deliver through it (Workers' shards).
 * - `proxy`: the next free slot, counted at once: in the shared `window` where there is one, else
 *   the schedule's next slot. Granted now → 0; granted a slot `n` ms from now → `-n` (the caller
 *   waits, then goes without asking again); no slot within {@link MAX_PROXY_WAIT_MS} → the wait,
 *   positive, as for a hold (nothing taken).
 *
 * Nothing is granted before `hold` (the platform's 429): the wait until then, positive.
 */
export function pace(state: PaceState, now: number, priority: 'proxy' | 'deliver', intervalMs: number, catchUpMs = 0, window?: SharedWindow): number {
  if (now < state.hold) return Math.ceil(state.hold - now);
  if (priority === 'deliver') {
    if (state.tat > now) return Math.ceil(state.tat - now);
    state.tat = Math.max(state.tat, now - catchUpMs) + intervalMs;
    return 0;
  }
  const wide = window === undefined ? undefined : sharedWindowAt(state, now, window);
  const calls = wide === undefined ? undefined : recent(state, now, wide);
  const at = calls === undefined ? Math.max(state.tat, now) : freeAt(calls, now, wide!);
  if (at - now > MAX_PROXY_WAIT_MS) return Math.ceil(at - now);
  state.tat = Math.max(state.tat, at) + intervalMs;
  if (calls !== undefined) insert(calls, at);
  return at > now ? -Math.ceil(at - now) : 0;
}

/**
 * A deliver call will leave `inMs` from `now` (when its spacer lets it): counted in the shared
 * window at that time if it fits there → 0; else the ms from then until it would (nothing counted).
 * Asked ahead, while the call waits for its spacer, so the store's round trip is not added to it.
 * `again`: the deliverer's last call counted ahead did not leave then (its spacer held it longer):
 * that count is moved, not added to. One deliverer leads, and its calls ask one at a time.
 */
export function paceLeave(state: PaceState, now: number, inMs: number, base: SharedWindow, again = false): number {
  if (now + inMs < state.hold) return Math.ceil(state.hold - now - inMs);
  const window = sharedWindowAt(state, now, base);
  const calls = recent(state, now, window);
  if (again && state.pending !== undefined && calls.includes(state.pending)) calls.splice(calls.indexOf(state.pending), 1);
  const at = now + Math.max(0, inMs);
  const free = freeAt(calls, at, window);
  if (free > at) return Math.ceil(free - at);
  insert(calls, at);
  state.pending = at;
  return 0;
}

/** The calls of the shared window that may still share one with a call from `now` on (kept in `state`, sorted: those gone are its first). */
function recent(state: PaceState, now: number, window: SharedWindow): number[] {
  state.calls ??= [];
  const calls = state.calls;
  let gone = 0;
  while (gone < calls.length && calls[gone]! <= now - window.ms) gone++;
  if (gone > 0) calls.splice(0, gone);
  return calls;
}

/** `at` into `calls` at its place (sorted; a call is most often the last). */
function insert(calls: number[], at: number): void {
  let i = calls.length;
  while (i > 0 && calls[i - 1]! > at) i--;
  calls.splice(i, 0, at);
}

/** Whether `calls` (sorted) with one more at `at` still has at most `budget` calls in any window of `ms`. */
function fits(calls: readonly number[], at: number, { budget, ms }: SharedWindow): boolean {
  const all = [...calls, at].sort((a, b) => a - b);
  for (let i = 0; i + budget < all.length; i++) if (all[i + budget]! - all[i]! < ms) return false;
  return true;
}

/** The earliest time from `at` when one more call fits in `calls` (sorted): at a call's time, a window after one, or `at` itself. */
export function freeAt(calls: readonly number[], at: number, window: SharedWindow): number {
  // Fewer calls than the budget in all: any window holds one more.
  if (calls.length < window.budget) return at;
  const candidates = [at, ...calls, ...calls.map((call) => call + window.ms)].filter((time) => time >= at).sort((a, b) => a - b);
  return candidates.find((time) => fits(calls, time, window)) ?? Math.max(at, ...calls) + window.ms;
}

/**
 * How far behind its schedule the Node deliverer may catch up: one platform window. Its spacer
 * and the shared window then keep any window to the rate.
 */
export const CATCH_UP_MS = 1_000;

/** The platform's default budget: about 10 calls a second per API key (professional plan). */
export const DEFAULT_PLATFORM_RATE = 10;

/** Validates a pacer's rate (platform calls per second) and returns the spacing of calls in ms. */
export function paceInterval(rate: number): number {
  if (!(Number.isFinite(rate) && rate > 0)) throw new RangeError(`the platform rate must be a number of calls per second above 0, got ${rate}`);
  return 1000 / rate;
}
