/**
 * Reading the relay's answer to one batch: each item it rules on is settled (it leaves the
 * queue) and reported, and what must wait says why.
 * @module
 */
import type { ItemResult } from '../api/collect.js';
import type { Emit } from './events.js';
import type { Queue } from './queue.js';
import type { Answer } from './send.js';
import type { Item } from './types.js';

/**
 * `settle(batch, answer)`: takes out of `queue` the items the answer settles, and returns why
 * the flush must stop (no per-item answer, or items told to `retry`); `undefined` when it may go on.
 */
export const createSettle =
  (queue: Queue, emit: Emit) =>
  (batch: Item[], [status, body]: Answer): string | undefined => {
    // A malformed or oversized body will never be accepted as it is: reject rather than loop.
    const results: ItemResult[] | false | undefined =
      status === 400 || status === 413
        ? batch.map(({ id }) => ({ id, status: 'rejected' as const, error: body.error?.message }))
        : status === 200 && body.results;
    if (!Array.isArray(results)) return body.error?.message ?? `HTTP ${status}`;
    const byId = new Map(batch.map((item) => [item.id, item]));
    const settled: string[] = [];
    let retry: string | undefined;
    for (const result of results) {
      const item = byId.get(result?.id);
      if (!item) continue;
      emit('result', { ...result, item });
      if (result.status === 'retry') retry = result.error || 'retry';
      else settled.push(result.id);
      if (result.status === 'rejected') {
        emit('reject', { item, error: result.error ?? 'rejected' });
        // A rejection that names its class is reported where every other loss is, e.g. `unverified`.
        if (result.reason) emit('drop', { item, reason: result.reason });
      }
    }
    queue.remove(settled);
    return retry;
  };
