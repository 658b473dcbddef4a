/**
 * Delivering one lease: entries a dead deliverer may have sent are held (activities) or sent again
 * (merges) by the ambiguous-call policy; the rest are planned into calls, merges first and all
 * answered (one call at a time, so no merge of the next lease overlaps them), then the activities.
 * No activity here has an identify before it still to deliver: the outbox does not lease a track
 * while its browser has an earlier merge in it. What is not sent goes back to the outbox at the
 * end of the lease.
 * @module
 */
import { planCalls } from './batch.js';
import type { Engine } from './engine.js';
import type { Leased } from '../state/outbox.js';
import { AMBIGUOUS_REASON, afterAmbiguous } from './policy.js';
import { type LeaseRun, runCalls } from './scheduler.js';

/**
 * Delivers the entries `leased` under lease `lease`; `full` when the outbox had more than it gave
 * (a backlog). `started` is told once every call of the lease has started.
 */
export async function deliverLease(engine: Engine, lease: string, leased: readonly Leased[], full: boolean, started: () => void): Promise<void> {
  const { clock, ambiguous } = engine.options;
  const expires = clock.now() + engine.leaseMs;
  // Entries a dead deliverer may have sent: merges go again, activities follow the policy.
  const going: Leased[] = [];
  const heldAtLease: Leased[] = [];
  for (const entry of leased) {
    if (entry.attempts > 0 && afterAmbiguous(entry.kind === 'activity' ? 'activities/create' : 'person/merge', ambiguous) === 'hold') heldAtLease.push(entry);
    else going.push(entry);
  }
  if (heldAtLease.length > 0) {
    await engine.settle(lease, { delivered: [], released: [], dead: heldAtLease.map((entry) => ({ seq: entry.seq, reason: AMBIGUOUS_REASON, status: 0 })) });
    engine.report({ endpoint: 'activities/create', status: 0, called: false, delivered: [], dead: [], released: [], ambiguous: heldAtLease, held: true });
  }

  const calls = planCalls(going, engine.mergeBy);
  // In a backlog, a last partial activities call waits for the next lease, where it fills.
  const last = calls.at(-1);
  if (full && last !== undefined && last.endpoint === 'activities/create' && last.entries.length < 100 && calls.length > 1) calls.pop();
  const sent = new Set(calls.flatMap((call) => call.entries.map((entry) => entry.seq)));
  const unplanned = going.filter((entry) => !sent.has(entry.seq));

  const state: LeaseRun = { lease, expires, released: [...unplanned], releaseAt: clock.now(), stopAt: undefined };
  try {
    await runCalls(
      engine,
      calls.filter((call) => call.endpoint === 'person/merge'),
      state,
    );
    await runCalls(
      engine,
      calls.filter((call) => call.endpoint === 'activities/create'),
      state,
      started,
    );
    const released = state.released.map((entry) => ({ seq: entry.seq, notBefore: state.releaseAt }));
    if (released.length > 0) await engine.settle(lease, { delivered: [], released, dead: [] });
  } finally {
    started();
  }
}
