/**
 * Cloudflare Queues, optional: a buffer in front of the outbox objects. With `RELAY_QUEUE` bound,
 * `/collect` answers `accepted` once the queue holds the items (no Durable Object call in the
 * request); the consumer puts each batch into the outbox objects (dedupe happens there) and acks
 * it. Delivery is the objects' alarms', as without a queue: no message waits on the platform, so
 * nothing depends on `max_retries` or a dead-letter queue.
 * @module
 */
import type { Outbox, OutboxItem } from '../state/outbox.js';
import { REMEMBER_MARGIN_MS } from '../ingest/handoff.js';
import { type Logger, type LogLine, scrub } from '../core/logging.js';
import type { Enqueue } from './handoff.js';
import type { MessageBatch, Queue } from './types.js';

/** Queues' limits per sendBatch: 100 messages, 256 KB. */
const MAX_MESSAGES = 100;
const MAX_BATCH_BYTES = 250 * 1024;
/** A batch the outbox objects could not take comes back this much later. */
const RETRY_SECONDS = 30;

/** An {@link Enqueue} that sends `items` to `queue` in batches within Queues' limits; what a failed batch leaves unsent is reported, not thrown. */
export function queueProducer(queue: Queue): Enqueue {
  return async (items) => {
    const taken: string[] = [];
    let batch: { body: OutboxItem }[] = [];
    let bytes = 0;
    const send = async () => {
      await queue.sendBatch(batch);
      for (const message of batch) taken.push(message.body.id);
      batch = [];
      bytes = 0;
    };
    try {
      for (const item of items) {
        const size = JSON.stringify(item).length + 64;
        if (batch.length > 0 && (batch.length >= MAX_MESSAGES || bytes + size > MAX_BATCH_BYTES)) await send();
        batch.push({ body: item });
        bytes += size;
      }
      if (batch.length > 0) await send();
    } catch (failure) {
      return { taken, failure };
    }
    return { taken };
  };
}

/**
 * Puts one batch of queued items into the outbox (one atomic step per outbox object) and acks
 * it; when the outbox objects cannot take it, the whole batch comes back later (an item an object
 * did take is then answered duplicate there: never stored twice).
 */
export async function consumeQueue(batch: MessageBatch<OutboxItem>, outbox: Outbox, windowMs: number, logger: Logger): Promise<void> {
  const started = Date.now();
  let outcome: Partial<LogLine>;
  try {
    const taken = await outbox.accept(
      batch.messages.map((message) => message.body),
      started,
      windowMs + REMEMBER_MARGIN_MS,
    );
    batch.ackAll();
    outcome = { status: 200, results: { accepted: taken.accepted.length, duplicate: taken.duplicate.length } };
  } catch (error) {
    batch.retryAll({ delaySeconds: RETRY_SECONDS });
    outcome = {
      level: 'error',
      status: 503,
      error: 'outbox_accept_failed',
      cause: scrub(error instanceof Error ? `${error.name}: ${error.message}` : String(error)),
    };
  }
  logger({
    ts: new Date(started).toISOString(),
    kind: 'queue',
    method: 'QUEUE',
    path: batch.queue,
    status: 0,
    ms: Date.now() - started,
    items: batch.messages.length,
    ...outcome,
  });
}
