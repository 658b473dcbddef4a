/**
 * Send spacing. Slots are granted `1000 / rate` ms apart, but between the grant and the moment a
 * call leaves come a store write (`sending`) and a connection, which take a different time for each
 * call. The platform counts calls in one-second windows, so a call that leaves early after a late
 * one is the eleventh in a window and draws a 429, which holds the whole deployment. So the
 * {@link Spacer} spaces calls again by the time they leave, right before they go, `1000 / rate` ms
 * apart plus {@link SEND_MARGIN} for what varies after that (the network, the platform's own clock).
 * @module
 */

/** Calls leave this much further apart than `1000 / rate`: 2% (20 ms a second at any rate). */
export const SEND_MARGIN = 0.02;

/** A timer wakes this late at most, and the schedule is kept (well within the margin). */
const TIMER_SLACK_MS = 2;

/** Spaces calls by the time they leave: one per driver, kept across rounds. */
export interface Spacer {
  /** ms to wait before a call may leave at `now`; 0 means it leaves now, and is counted. */
  wait(now: number): number;
  /** The call that left at `left` was answered at `now`. */
  answered(left: number, now: number): void;
}

/** How often a call waiting for the window's first answer looks again. */
const OPENER_POLL_MS = 5;
/** Calls that follow a pause this long open a new platform window. */
const WINDOW_MS = 1_000;

/**
 * A spacer of `rate` calls a second. The first call after a pause opens the platform's window when
 * it arrives, which may be well after it left (a new connection): the next call waits for its
 * answer (it arrived by then), at most a window, and leaves an interval after that.
 */
export function createSpacer(rate: number): Spacer {
  const interval = (1000 / rate) * (1 + SEND_MARGIN);
  let next = 0;
  let last = Number.NEGATIVE_INFINITY;
  /** when the call opening a window left, until it is answered */
  let opener: number | undefined;
  return {
    wait(now) {
      if (opener !== undefined) {
        // Not answered yet: look again shortly; never answered within a window, go on after it.
        if (now < opener + WINDOW_MS) return Math.max(1, Math.min(OPENER_POLL_MS, Math.ceil(opener + WINDOW_MS + interval - now)));
        next = Math.max(next, opener + WINDOW_MS + interval);
        opener = undefined;
      }
      if (now < next) return Math.ceil(next - now);
      if (now - last >= WINDOW_MS) opener = now;
      // A call that waited for its time and woke a little late keeps the schedule, so timers'
      // lateness does not add up; a later one starts it again from now.
      next = (now - next < TIMER_SLACK_MS ? next : now) + interval;
      last = now;
      return 0;
    },
    answered(left, now) {
      if (left !== opener) return;
      opener = undefined;
      next = Math.max(next, now + interval);
    },
  };
}
