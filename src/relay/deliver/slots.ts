/**
 * Pacer waits and send spacing. A call goes only in a slot of the deployment's budget
 * (`Pacer.take`): a short wait is slept out; a long one (the platform's 429 hold) is handed back,
 * and the caller releases its entries to the outbox instead of holding them leased.
 * Right before a call goes, it waits for the spacer (spacer.ts) to let it leave.
 * @module
 */
import type { Engine } from './engine.js';

/** The pacer's wait a leased entry sits out; longer (a 429 hold), the entries go back to the outbox. */
export const MAX_PACER_WAIT_MS = 2_000;

/** Waits for a pacer slot: 0 once taken, else how long the budget is held (nothing was taken). */
export async function takeSlot(engine: Engine): Promise<number> {
  const { pacer, clock } = engine.options;
  for (;;) {
    const wait = await pacer.take(clock.now(), 'deliver');
    if (wait === 0) return 0;
    if (wait > MAX_PACER_WAIT_MS || engine.stopped()) return wait;
    await engine.nap(wait);
  }
}

/** Waits until the call may leave (spacer.ts); resolves to the time it left. */
export async function waitToLeave(engine: Engine): Promise<number> {
  for (;;) {
    const now = engine.options.clock.now();
    const wait = engine.spacer.wait(now);
    if (wait === 0) return now;
    await engine.nap(wait);
  }
}
