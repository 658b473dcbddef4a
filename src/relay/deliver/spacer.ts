/**
 * Send spacing. The platform counts calls in one-second windows, each opened by the first call
 * that arrives after the last window ended; one call too many in a window draws a 429, which holds
 * the whole deployment. Slots are granted by the pacer, but between the grant and the moment a
 * call leaves come a store write (`sending`) and a connection, which take a different time for
 * each call. So the {@link Spacer} counts calls by the time they leave, right before they go: at
 * most `rate` calls in any {@link SPACER_WINDOW_MS} (a second plus {@link SEND_MARGIN}, for what
 * varies after that: the network, the platform's own clock).
 *
 * Counting over a sliding window, not spacing each call from the one before, is what keeps the
 * rate: a call that leaves late (a timer, a store write, a merge's answer awaited) does not push
 * every later call back; the calls after it catch up, at most twice the rate, until `rate` calls
 * have left in the window again.
 *
 * A call is counted from when it left until its answer says more: one answered later than calls
 * usually are (by {@link MAX_SHIFT_MS} at most) may have reached the platform that much later,
 * held up on the way (the relay's event loop busy with a store write between the count and the
 * socket, a connection, a platform process that was not scheduled), and opened the platform's
 * window that late. It is then counted from its answer less the usual round trip. Measured with
 * the delivery bench on a loaded 2-core machine, such a call arrived up to 180 ms after it was
 * counted, and the tenth call after it drew a 429: no fixed margin a deliverer can afford covers
 * that, the answers do.
 *
 * What the answers cannot show (a platform's own clock, jitter on the way there) a 429 does: the
 * spacer's margin widens with its calls' 429s and narrows after a quiet stretch, by the rule the
 * key's pacer keeps in the store (state/margin.ts).
 * @module
 */
import { marginAt, SEND_MARGIN } from '../state/margin.js';
import { marginWindowMs, type PaceState, paceHold, PLATFORM_WINDOW_MS, SHARED_WINDOW_MS } from '../state/pace.js';

/**
 * A call answered late (or not yet) is counted at most this much later than it left: a window.
 * With 250 ms, and calls counted again only once answered, a fresh-clone test run at load 4 drew
 * a 429 (`delivery-pacing`, relay and platform in one process): a call held up longer than that,
 * or answered only after the tenth call behind it had left, was not covered.
 */
export const MAX_SHIFT_MS = 1_000;
/** Round trips kept for the usual one (their median). */
const RECENT_ANSWERS = 21;
/** The platform's window. */
const WINDOW_MS = PLATFORM_WINDOW_MS;
/** At most `rate` calls leave in any window of this length: the platform's and the base margin ({@link SEND_MARGIN}), until a 429 widens it. */
export const SPACER_WINDOW_MS = SHARED_WINDOW_MS;

/** Spaces calls by the time they leave: one per driver, kept across rounds. */
export interface Spacer {
  /** ms to wait before a call may leave at `now`; 0 means it leaves now, and is counted. */
  wait(now: number): number;
  /** ms to wait before a call may leave at `now`, counting nothing ({@link Spacer.count} counts it once it goes). */
  look(now: number): number;
  /** A call leaves at `now`. */
  count(now: number): void;
  /** Whether calls wait for the answer to the first call after a pause (a probe): when they may go is not known yet. */
  probing(now: number): boolean;
  /**
   * The call that left at `left` was answered at `now` (whatever the answer); `holdUntil`: it was
   * answered 429, and the key is held until then (the hold's first 429 widens the margin).
   */
  answered(left: number, now: number, holdUntil?: number): void;
  /** Whether a call at `now` would wait for the window: the key's budget is spent for now (counts nothing). */
  spent(now: number): boolean;
  /** The send margin its window keeps at `now`: {@link SEND_MARGIN} until a 429 widens it (state/margin.ts). */
  margin(now: number): number;
  /**
   * How long before its place a call's `sending` mark begins, so that the write ends about when
   * the call may leave instead of after: the middle of the last marks' times, {@link MAX_MARK_LEAD_MS} at most.
   */
  markLead(): number;
  /** A call's `sending` mark took `ms`. */
  marked(ms: number): void;
}

/**
 * The longest a call's mark begins before its place: its entries wait marked (in doubt, should the
 * deliverer die then) that long at most, once the mark is written.
 */
export const MAX_MARK_LEAD_MS = 20;

/** How often a call waiting for the window's first answer looks again. */
const OPENER_POLL_MS = 5;

/**
 * A spacer of `rate` calls a second. The first call after a pause opens the platform's window when
 * it arrives, which may be well after it left (a new connection): it is counted from its answer
 * (it arrived by then) rather than from when it left, at most a window after it left.
 *
 * That first call is also a probe: no other call leaves until it is answered, at most a window.
 * A platform that has stopped answering (or applies a call and loses the answer) then holds one
 * call's entries in doubt, not a burst of them.
 */
export function createSpacer(rate: number): Spacer {
  if (!(Number.isFinite(rate) && rate > 0)) throw new RangeError(`the spacer's rate must be above 0, got ${rate}`);
  const budget = Math.max(1, Math.floor(rate));
  /** calls never leave closer than this: a catch-up runs at twice the rate at most */
  const minGap = 1000 / rate / 2;
  /** the calls that may still count in a window, in the order they left: when each counts from (when it left; once answered, what its answer says) */
  const counted: { left: number; at: number; opener: boolean; answered: boolean }[] = [];
  /**
   * The openers among them not answered yet, a few at most: at the key's full rate `counted` holds
   * a couple of seconds of calls (hundreds at 1,000 a second), and every look asks for a probe.
   */
  let openers: (typeof counted)[number][] = [];
  let last = Number.NEGATIVE_INFINITY;
  /** the last calls' round trips, from leaving to the answer */
  const roundTrips = recentValues(RECENT_ANSWERS);
  /** the last `sending` marks' times */
  const marks = recentValues(RECENT_ANSWERS);
  /** the margin its calls' 429s taught, and their hold (state/pace.ts `paceHold`) */
  const learned: PaceState = { tat: 0, hold: 0 };
  const windowMs = (now: number) => marginWindowMs(learned, now);
  /**
   * When a call counts from at `now` (`usual`: the usual round trip): an opener never answered, a window after it left (the probe
   * below waits for it until then); another call not answered yet may not have arrived either: as
   * if it arrived now less the usual round trip, {@link MAX_SHIFT_MS} after it left at most.
   */
  const from = (call: (typeof counted)[number], now: number, usual: number) => {
    if (call.opener) return call.left + WINDOW_MS;
    if (call.answered) return call.at;
    return Math.max(call.at, Math.min(call.left + MAX_SHIFT_MS, now - usual));
  };
  /** When a call may leave, as the calls counted in the window ending at `now` say: fewer than `budget` of them by then. */
  const windowFreeAt = (now: number): number => {
    const window = windowMs(now);
    // A call can count no later than a window after it left: older ones are done with.
    while (counted.length > 0 && counted[0]!.left + MAX_SHIFT_MS + window <= now) counted.shift();
    // Fewer calls than the budget can count at all: the window has room, whenever each counts from.
    if (counted.length < budget) return now;
    const usual = roundTrips.median() ?? 0;
    const froms = counted
      .map((call) => from(call, now, usual))
      .filter((at) => at > now - window)
      .sort((a, b) => a - b);
    return froms.length < budget ? now : froms[froms.length - budget]! + window;
  };
  const probeAt = (now: number) => {
    if (openers.length === 0) return undefined;
    // An opener is a probe for a window after it left: then, or once answered, it is one no more.
    openers = openers.filter((call) => call.opener && now < call.left + WINDOW_MS);
    return openers[0];
  };
  /** The wait every rule sets at `now` (the gap, the probe, the window), the longest. */
  const look = (now: number): number => {
    const gap = Math.ceil(last + minGap - now);
    const probe = probeAt(now);
    if (probe !== undefined) return Math.max(gap, 1, Math.min(OPENER_POLL_MS, Math.ceil(probe.left + WINDOW_MS - now)));
    return Math.max(0, gap, Math.ceil(windowFreeAt(now) - now));
  };
  const count = (now: number) => {
    const call = { left: now, at: now, opener: now - last >= WINDOW_MS, answered: false };
    counted.push(call);
    if (call.opener) openers.push(call);
    last = now;
  };
  return {
    look,
    count,
    probing: (now) => probeAt(now) !== undefined,
    wait(now) {
      const wait = look(now);
      if (wait === 0) count(now);
      return wait;
    },
    spent(now) {
      return windowFreeAt(now) > now;
    },
    margin: (now) => marginAt(learned, now),
    markLead: () => Math.min(MAX_MARK_LEAD_MS, marks.median() ?? 0),
    marked(ms) {
      marks.add(Math.max(0, ms));
    },
    answered(left, now, holdUntil) {
      if (holdUntil !== undefined) paceHold(learned, now, holdUntil);
      const usual = roundTrips.median();
      roundTrips.add(now - left);
      // The first call that left then, looked for from the newest: the answer is of a recent call, as a rule.
      let call: (typeof counted)[number] | undefined;
      for (let i = counted.length - 1; i >= 0 && counted[i]!.left >= left; i--) if (counted[i]!.left === left) call = counted[i];
      if (call === undefined) return;
      call.answered = true;
      if (call.opener) {
        call.opener = false;
        call.at = now;
      } else if (usual !== undefined) {
        call.at = Math.max(call.at, Math.min(call.left + MAX_SHIFT_MS, now - usual));
      }
    },
  };
}

/**
 * The last `size` values added, and their middle one: kept in order too, so that a median read at
 * every call's look and answer costs no copy and no sort.
 */
function recentValues(size: number): { add(value: number): void; median(): number | undefined } {
  const arrived: number[] = [];
  const sorted: number[] = [];
  /** where `value` goes among the sorted values: after those not greater than it */
  const placeOf = (value: number) => {
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (sorted[mid]! <= value) low = mid + 1;
      else high = mid;
    }
    return low;
  };
  return {
    add(value) {
      arrived.push(value);
      sorted.splice(placeOf(value), 0, value);
      if (arrived.length > size) sorted.splice(placeOf(arrived.shift()!) - 1, 1);
    },
    median: () => (sorted.length === 0 ? undefined : sorted[Math.floor(sorted.length / 2)]),
  };
}
