/**
 * Optional Cloudflare Queues path: `/collect` hands accepted entries to the queue and
 * answers at once; the consumer forwards them (identify groups first), acks what the
 * platform took or refused for good, and retries the rest with a delay. After the queue's
 * `max_retries` a message goes to its dead-letter queue (see wrangler.toml).
 * @module
 */
import type { Enqueue, QueuedEntry } from '../ingest/collect.js';
import { forward, type EndpointCall } from '../deliver/calls.js';
import type { SendContext } from '../deliver/send.js';
import type { Logger } from '../logging.js';
import type { DedupeScope, RelayStore } from '../store.js';
import type { MessageBatch, Queue, QueueMessage } from './types.js';

/** Queues' limits per sendBatch: 100 messages, 256 KB. */
const MAX_MESSAGES = 100;
const MAX_BATCH_BYTES = 250 * 1024;

/** An {@link Enqueue} that sends `entries` to `queue` in batches within Queues' limits; what a failed batch leaves unsent is reported, not thrown. */
export function queueProducer(queue: Queue): Enqueue {
  return async (entries) => {
    const taken: string[] = [];
    let batch: { body: QueuedEntry }[] = [];
    let bytes = 0;
    const send = async () => {
      await queue.sendBatch(batch);
      for (const message of batch) taken.push(message.body.id);
      batch = [];
      bytes = 0;
    };
    try {
      for (const entry of entries) {
        const size = JSON.stringify(entry).length + 64;
        if (batch.length > 0 && (batch.length >= MAX_MESSAGES || bytes + size > MAX_BATCH_BYTES)) await send();
        batch.push({ body: entry });
        bytes += size;
      }
      if (batch.length > 0) await send();
    } catch (failure) {
      return { taken, failure };
    }
    return { taken };
  };
}

/** The dedupe scope of what the consumer has delivered: apart from /collect's, which marks ids when they are queued. */
export const deliveryScope = (site: string): DedupeScope => ({ site: `delivered:${site}` });

export interface ConsumeContext extends Omit<SendContext, 'statuses'> {
  store: RelayStore;
  /** how long a delivered id is remembered */
  dedupeTtlMs: number;
}

/**
 * Forwards one batch of queued entries; every message is acked or retried. An item already
 * delivered (a redelivered message, or one queued twice) is acked without a call; one another
 * consumer is delivering right now is retried later.
 */
export async function consumeQueue(batch: MessageBatch<QueuedEntry>, ctx: ConsumeContext, logger: Logger): Promise<void> {
  const started = ctx.clock.now();
  const counts: Record<string, number> = {};
  const count = (status: string) => {
    counts[status] = (counts[status] ?? 0) + 1;
  };
  const bySite = new Map<string, QueueMessage<QueuedEntry>[]>();
  for (const message of batch.messages) bySite.set(message.body.site, [...(bySite.get(message.body.site) ?? []), message]);

  // A lease outlives this run with room to mark; a consumer that dies mid-run holds its ids no longer.
  const leaseMs = ctx.deadline - started + 30_000;
  const going: QueueMessage<QueuedEntry>[] = [];
  for (const [site, messages] of bySite) {
    const claim = await ctx.store.claim(
      deliveryScope(site),
      messages.map((message) => message.body.id),
      started,
      leaseMs,
    );
    const fresh = new Set(claim.fresh);
    const duplicate = new Set(claim.duplicate);
    for (const message of messages) {
      if (fresh.has(message.body.id)) {
        fresh.delete(message.body.id); // the same id twice in one batch: the second waits
        going.push(message);
      } else if (duplicate.has(message.body.id)) {
        count('duplicate');
        message.ack();
      } else {
        // Another run holds it (or held it and died): come back once its lease is over, so
        // waiting does not spend the message's retries.
        count('busy');
        message.retry({ delaySeconds: Math.ceil(leaseMs / 1000) });
      }
    }
  }

  const groups = new Map<string, EndpointCall>();
  for (const message of going) {
    const { endpoint, envelope, entry, id } = message.body;
    const key = `${endpoint}\u0000${JSON.stringify(envelope)}`;
    let group = groups.get(key);
    if (!group) {
      group = { endpoint, envelope, entries: [] };
      groups.set(key, group);
    }
    group.entries.push({ id, entry });
  }
  // person/merge groups before activities/create: identify before track.
  const ordered = [...groups.values()].sort((a, b) => (a.endpoint === b.endpoint ? 0 : a.endpoint === 'person/merge' ? -1 : 1));
  const statuses: number[] = [];
  const forwarded = await forward({ ...ctx, statuses }, ordered);
  const delivered = new Map<string, { forwarded: string[]; released: string[] }>();
  const outcomes: { message: QueueMessage<QueuedEntry>; status: string }[] = [];
  for (const message of going) {
    const status = forwarded.results.get(message.body.id)?.status ?? 'retry';
    count(status);
    outcomes.push({ message, status });
    const settlement = delivered.get(message.body.site) ?? { forwarded: [], released: [] };
    delivered.set(message.body.site, settlement);
    (status === 'accepted' ? settlement.forwarded : settlement.released).push(message.body.id);
  }
  // Marked delivered before any ack: a run that dies after this point leaves messages that come
  // again and are found delivered. Only a death between the platform's answer and this mark can
  // repeat an item, and the lease holds the redelivery back until it is over.
  let warning: string | undefined;
  for (const [site, settlement] of delivered) {
    try {
      await ctx.store.settle(deliveryScope(site), { ...settlement, until: ctx.clock.now() + ctx.dedupeTtlMs });
    } catch (error) {
      // The platform has them: acked anyway, or the queue would send them again at once.
      warning = `state_settle_failed: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
  for (const { message, status } of outcomes) {
    if (status === 'retry') message.retry({ delaySeconds: Math.max(5, forwarded.retryAfter) });
    else message.ack();
  }
  logger({
    ts: new Date(started).toISOString(),
    kind: 'queue',
    method: 'QUEUE',
    path: batch.queue,
    status: 200,
    ms: ctx.clock.now() - started,
    items: batch.messages.length,
    results: counts,
    upstream: statuses,
    ...(warning === undefined ? {} : { warning }),
  });
}
