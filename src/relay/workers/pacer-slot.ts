/**
 * The slots of the key's pacer object (RelayState.take): the pacing rule on its stored state, and
 * the wait inside the object for a slot. A call that waits there is answered once granted: one
 * request per call, where answering each wait had the caller ask again after it (and every caller
 * told the same wait asked at once). Each look applies the rule at that moment, so a proxy call,
 * a hold or a merge turn given back meanwhile is seen.
 * @module
 */
import type { DurableObjectState } from '@cloudflare/workers-types/index.ts';
import { pace } from '../state/pace.js';

/** A slot of pacer `name`'s budget (see {@link pace}), in one transaction: 0 when granted, else the ms to wait. */
export function paceSlot(storage: DurableObjectState['storage'], name: string, now: number, priority: 'proxy' | 'deliver', intervalMs: number): number {
  const sql = storage.sql;
  return storage.transactionSync(() => {
    const state = sql.exec<{ tat: number; hold: number }>('SELECT tat, hold FROM pace WHERE name = ?', name).toArray()[0] ?? { tat: 0, hold: 0 };
    const wait = pace(state, now, priority, intervalMs);
    if (wait <= 0)
      sql.exec('INSERT INTO pace (name, tat, hold) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET tat = excluded.tat', name, state.tat, state.hold);
    return wait;
  });
}

/**
 * Looks (`look`: 0 when granted, else the ms to wait) at `now` plus the time waited, sleeping out
 * each wait, until granted or until the wait would pass `waitUpToMs` in all: then answers that
 * wait. `first` tells the look it is the request's first.
 */
export async function waitForSlot(now: number, waitUpToMs: number, look: (now: number, first: boolean) => number): Promise<number> {
  const started = Date.now();
  for (let first = true; ; first = false) {
    const waited = Date.now() - started;
    const wait = look(now + waited, first);
    if (wait <= 0 || waited + wait > waitUpToMs) return wait;
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}
