/**
 * Optional Cloudflare Queues path: `/collect` hands accepted entries to the queue and
 * answers at once; the consumer forwards them (identify groups first), acks what the
 * platform took or refused for good, and retries the rest with a delay. After the queue's
 * `max_retries` a message goes to its dead-letter queue (see wrangler.toml).
 * @module
 */
import type { QueuedEntry } from '../collect/handler.js';
import { forward, type Group } from '../collect/forward.js';
import type { SendContext } from '../collect/upstream.js';
import type { Logger } from '../logging.js';
import type { MessageBatch, Queue } from './types.js';

/** Queues' limits per sendBatch: 100 messages, 256 KB. */
const MAX_MESSAGES = 100;
const MAX_BATCH_BYTES = 250 * 1024;

/** An `enqueue` for the relay that sends `entries` to `queue` in batches within Queues' limits. */
export function queueProducer(queue: Queue): (entries: QueuedEntry[]) => Promise<void> {
  return async (entries) => {
    let batch: { body: QueuedEntry }[] = [];
    let bytes = 0;
    for (const entry of entries) {
      const size = JSON.stringify(entry).length + 64;
      if (batch.length > 0 && (batch.length >= MAX_MESSAGES || bytes + size > MAX_BATCH_BYTES)) {
        await queue.sendBatch(batch);
        batch = [];
        bytes = 0;
      }
      batch.push({ body: entry });
      bytes += size;
    }
    if (batch.length > 0) await queue.sendBatch(batch);
  };
}

/** Forwards one batch of queued entries; every message is acked or retried. */
export async function consumeQueue(batch: MessageBatch<QueuedEntry>, ctx: Omit<SendContext, 'statuses'>, logger: Logger): Promise<void> {
  const started = ctx.clock.now();
  const groups = new Map<string, Group>();
  for (const message of batch.messages) {
    const { endpoint, envelope, entry } = message.body;
    const key = `${endpoint}\u0000${JSON.stringify(envelope)}`;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { endpoint, envelope, entries: [] }));
    group.entries.push({ id: message.id, entry });
  }
  // person/merge groups before activities/create: identify before track.
  const ordered = [...groups.values()].sort((a, b) => (a.endpoint === b.endpoint ? 0 : a.endpoint === 'person/merge' ? -1 : 1));
  const statuses: number[] = [];
  const forwarded = await forward({ ...ctx, statuses }, ordered);
  const counts: Record<string, number> = {};
  for (const message of batch.messages) {
    const result = forwarded.results.get(message.id);
    const status = result?.status ?? 'retry';
    counts[status] = (counts[status] ?? 0) + 1;
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
  });
}
