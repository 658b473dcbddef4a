/**
 * The send margin a key's pacer keeps, learned from the platform's answers. Calls are counted over
 * a window longer than the platform's second by the margin, for how much later one call may reach
 * the platform than another that left at the same pace (the network, the platform's own clock, a
 * busy relay): what the answers cannot show. Most deployments need {@link SEND_MARGIN}; one whose
 * calls meet more jitter draws a 429 now and then, and each 429 holds the whole key for a second.
 *
 * So a 429 widens the margin (doubles it, up to {@link MAX_MARGIN}), once per hold however many
 * calls of the same moment were answered 429; after {@link QUIET_MS} (5 minutes) without one it
 * narrows again, a point every {@link NARROW_MS} (20 s). A deployment that meets jitter draws a few 429s and then none;
 * one that meets none keeps the base margin, and its throughput. The rule is AIMD's, on the margin:
 * widen fast (a 429 costs a second of the key), narrow slowly (a point costs 1% of throughput).
 *
 * The margin lives with the hold, in the pacer's state in the store (memory, the SQLite file, the
 * Redis hash, the Workers pacer object), so every relay and isolate sharing a key paces at the
 * margin any of their 429s taught; the Node deliverer's spacer (deliver/spacer.ts) keeps a copy
 * taught by its own calls' 429s. Pure, so the SQLite store runs it inside its transaction, and
 * Redis's script has it in Lua (state/redis-pace-lua.ts, from these constants).
 * @module
 */

/**
 * The base margin: 3% (30 ms of a second). With 2% and no counting of late answers
 * (deliver/spacer.ts), a full test run on a loaded 2-core machine drew a 429; a fixed 5% would cost
 * 2% of throughput at saturation on every deployment, for the jitter only some meet.
 */
export const SEND_MARGIN = 0.03;
/** The widest margin 429s teach: 15% (150 ms of a second), at 87% of the key's rate. */
export const MAX_MARGIN = 0.15;
/**
 * How long a widened margin holds without a 429 before it narrows. Narrowing is a probe: where the
 * jitter lasts, the margin narrows until a 429 widens it again, so this is how often such a
 * deployment draws one (a 1 s hold in 5 minutes: 0.3% of its throughput). With a minute, a
 * simulation with 100 ms of jitter drew a 429 every 90 s (test/relay/pacing.test.ts).
 */
export const QUIET_MS = 300_000;
/** Then it narrows by a point (1%) each this long, down to {@link SEND_MARGIN}: from 15%, in 4 minutes. */
export const NARROW_MS = 20_000;
/** How much a point is. */
const POINT = 0.01;

/** A pacer's learned margin: as its last 429 set it (`margin`), and when (`widened`); none yet → the base. */
export interface Margin {
  margin?: number | undefined;
  widened?: number | undefined;
}

/** The margin at `now`: as last widened, less the points narrowed since, never under the base. */
export function marginAt(state: Margin, now: number): number {
  if (state.margin === undefined || state.widened === undefined) return SEND_MARGIN;
  const narrowed = (Math.max(0, now - state.widened - QUIET_MS) / NARROW_MS) * POINT;
  return Math.min(MAX_MARGIN, Math.max(SEND_MARGIN, state.margin - narrowed));
}

/** A 429 at `now`: the margin doubles from what it is then, up to {@link MAX_MARGIN}. */
export function widen(state: Margin, now: number): void {
  state.margin = Math.min(MAX_MARGIN, 2 * marginAt(state, now));
  state.widened = now;
}
