/**
 * One delivery round, the engine's entry point for every driver: leases and delivers until the
 * outbox has nothing ready, the deadline comes or the driver stops. The Node deliverer's loop runs
 * rounds back to back (deliverer.ts); on Workers, a Durable Object's alarm runs one round per
 * alarm. Leases overlap: the next is taken once every call of the current one has started, so the
 * budget never idles while a lease's last answers come back. Each lease has its own name in the
 * outbox (`owner#n`): two leases of one deliverer never settle each other's entries.
 * @module
 */
import { createEngine, type RoundOptions } from './engine.js';
import { deliverLease } from './lease-run.js';
import type { Leased } from '../state/outbox.js';
import { describe } from './report.js';
import { giveBackTurns } from './slots.js';

/** Leases delivered at once: the next one's calls start while this one's last answers come back. */
const MAX_ACTIVE_LEASES = 2;

export interface RoundResult {
  /** leases taken (with at least one entry) */
  leases: number;
  /** entries leased */
  entries: number;
  /** false when the round ended because nothing was ready; true when it ended early (deadline, stop, a failure) */
  more: boolean;
}

let leases = 0;
/** A lease's name in the outbox: the owner's, and a number no other lease of this process has. */
const leaseName = (owner: string) => `${owner}#${(++leases).toString(36)}`;

/** Leases and delivers until nothing is ready, `deadline` comes or the driver stops; resolves once every call of the round is answered and settled. */
export async function deliverRound(options: RoundOptions): Promise<RoundResult> {
  const engine = createEngine(options);
  const { outbox, clock, lead } = options;
  const active = new Set<Promise<void>>();
  const result: RoundResult = { leases: 0, entries: 0, more: false };
  let failed = false;
  /** leases in flight that held calls back to fill: their entries come back to the outbox when each ends */
  const holding = new Set<Promise<void>>();
  try {
    for (;;) {
      if (failed || engine.stopped() || clock.now() >= options.deadline || (lead && !(await lead.keep()))) {
        result.more = true;
        break;
      }
      // Leases overlap: the next is taken once every call of this one has started.
      while (active.size >= MAX_ACTIVE_LEASES) await Promise.race(active);
      const lease = leaseName(options.owner);
      let leased: Leased[];
      try {
        leased = await outbox.lease(lease, engine.leaseSize, clock.now(), engine.leaseMs);
      } catch (error) {
        engine.log({ level: 'error', error: 'delivery_failed', cause: describe(error) });
        result.more = true;
        break;
      }
      // What a lease held back comes back to the outbox as it ends: then the next lease takes it.
      if (leased.length === 0) {
        if (holding.size === 0) break;
        await Promise.allSettled([...holding]);
        continue;
      }
      result.leases++;
      result.entries += leased.length;
      let started!: (heldBack: boolean) => void;
      let heldBack = false;
      const allStarted = new Promise<void>((resolve) => {
        started = (held) => {
          heldBack ||= held;
          resolve();
        };
      });
      const run: Promise<void> = deliverLease(engine, lease, leased, leased.length === engine.leaseSize, started)
        .catch((error: unknown) => {
          engine.log({ level: 'error', error: 'delivery_failed', cause: describe(error) });
          failed = true;
        })
        .finally(() => {
          active.delete(run);
          holding.delete(run);
        });
      active.add(run);
      await Promise.race([allStarted, run]);
      if (heldBack && active.has(run)) holding.add(run);
      // A partial lease: the outbox had no more; wait for more (Node) or end the round (an alarm).
      // Its merges are settled by now: the tracks they held (identify before track) may go at once.
      const freed = leased.some((entry) => entry.kind !== 'activity');
      if (leased.length < engine.leaseSize && !freed) {
        if (holding.size > 0) {
          await Promise.allSettled([...holding]);
          continue;
        }
        if (!(options.refill && (await options.refill()))) break;
      }
    }
  } finally {
    await Promise.allSettled([...active]);
    // Merge turns answered since the last slot request: no request is coming to carry them.
    await giveBackTurns(engine);
  }
  return result;
}
