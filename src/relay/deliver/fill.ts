/**
 * Waiting to fill a call: a deliverer that has nothing ready naps, and ingest's kicks (items
 * accepted in this process) wake it once a full call's worth has come, or when the oldest of them
 * has waited `waitMs`. A partial call thus waits at most `waitMs` for more entries.
 *
 * Kicks end only the waits for items. A round's other waits (a pacer slot, the spacer, the lead)
 * end on their timer or a stop: new items do not bring a slot sooner, and a wait woken early asks
 * its store again (at 100 requests a second, every kick woke a call waiting to leave, which
 * counted itself again in the pacer: six pacer writes a call instead of one).
 * @module
 */

/** A full call's worth of entries: no reason to wait for the timer. */
const FULL_CALL = 100;

export interface Filler {
  /** Ingest accepted `count` items. */
  kick(count: number): void;
  /** Waits until a call is worth leasing for: enough accepted here, the oldest waited `waitMs`, or a poll's worth of time. */
  waitToFill(): Promise<void>;
  /** Sleeps `ms` (real time), or less when woken or stopped. */
  nap(ms: number): Promise<void>;
  /** As {@link nap}, and ends once a full call's worth has been kicked since the last reset (at once if it has). */
  napForItems(ms: number): Promise<void>;
  /** Ends every nap now (a stop, a drained() caller). */
  wake(): void;
  /** A drained() caller wants the next lease now, without waiting to fill: counted while it waits. */
  hurry(by: 1 | -1): void;
  /** Forgets the kicks: a lease is being taken. */
  reset(): void;
}

export function createFiller(waitMs: number, stopped: () => boolean): Filler {
  /** items accepted in this process since the last lease, and when the first of them came */
  let kicked = 0;
  let firstKickAt: number | undefined;
  let hurrying = 0;
  /** every nap in progress (the loop's, and a round's pacer or lead waits): a stop ends them all */
  const napping = new Set<() => void>();
  /** the naps that wait for items: a full call's worth of kicks ends them */
  const forItems = new Set<() => void>();

  function nap(ms: number, items = false): Promise<void> {
    // A stop has begun: no new nap. Its timer would not keep the process alive (below), so a nap
    // begun after the stop's wake would leave the stop waiting on a timer that never fires.
    if (stopped() || (items && kicked >= FULL_CALL)) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.max(0, ms));
      // Never what keeps a process alive: the server (or the caller) does that.
      (timer as { unref?: () => void }).unref?.();
      function done() {
        clearTimeout(timer);
        napping.delete(done);
        forItems.delete(done);
        resolve();
      }
      napping.add(done);
      if (items) forItems.add(done);
    });
  }

  const wakeAll = () => {
    for (const done of [...napping]) done();
  };

  return {
    kick(count) {
      const before = kicked;
      kicked += count;
      firstKickAt ??= Date.now();
      // Once, when a full call's worth is there: a nap for items begun later ends at once (above).
      if (before < FULL_CALL && kicked >= FULL_CALL) for (const done of [...forItems]) done();
    },
    async waitToFill() {
      if (hurrying > 0 || waitMs === 0) return;
      const started = Date.now();
      for (;;) {
        if (stopped() || hurrying > 0 || kicked >= FULL_CALL) return;
        const left = (firstKickAt ?? started) + waitMs - Date.now();
        if (left <= 0) return;
        await nap(left, true);
      }
    },
    nap: (ms) => nap(ms),
    napForItems: (ms) => nap(ms, true),
    wake: wakeAll,
    hurry(by) {
      hurrying += by;
    },
    reset() {
      kicked = 0;
      firstKickAt = undefined;
    },
  };
}
