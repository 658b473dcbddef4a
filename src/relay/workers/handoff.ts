/**
 * The Workers hand-off with a queue bound (`RELAY_QUEUE`): accepted items go to Cloudflare Queues
 * as the outbox items they will be, and the consumer puts them into the outbox objects
 * (queue.ts). Without a queue, `/collect` hands items to the outbox objects itself (ingest's
 * outbox hand-off over workers/outbox.ts).
 * @module
 */
import type { ItemResult } from '../../api/collect.js';
import type { OutboxItem } from '../state/outbox.js';
import type { Handoff } from '../ingest/handoff.js';

/** What a queue producer took: the ids of every batch it sent, and why it stopped when it did not send them all. */
export interface Enqueued {
  taken: string[];
  failure?: unknown;
}

/** Hands items to a queue; never throws: a failure comes back as `failure`, beside what was taken before it. */
export type Enqueue = (items: OutboxItem[]) => Promise<Enqueued>;

const describe = (error: unknown): string => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

/** Workers Queues: what the queue took is accepted; the consumer dedupes it in the outbox objects. */
export function queueHandoff(enqueue: Enqueue): Handoff {
  return async ({ site, items, browser, visitor, now }) => {
    const results = new Map<string, ItemResult>();
    // What the queue took is accepted, even when a later batch failed; only what it did not take is retried.
    const { taken, failure } = await enqueue(
      items.map((item) => ({ site: site.key, id: item.id, kind: item.kind, entry: item.entry, browser, visitor, accepted: now })),
    );
    const takenIds = new Set(taken);
    for (const item of items) {
      results.set(
        item.id,
        takenIds.has(item.id)
          ? { id: item.id, status: 'accepted' }
          : { id: item.id, status: 'retry', error: 'the queue did not take the item; it was kept for later' },
      );
    }
    return { results, retryAfter: failure === undefined ? 0 : 5, ...(failure === undefined ? {} : { warning: `queue_send_failed: ${describe(failure)}` }) };
  };
}
