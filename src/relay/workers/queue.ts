/**
 * The Cloudflare Queues path: `/collect` hands accepted entries to the queue and answers at
 * once; the consumer is the deliverer. It checks each id against the site's delivery ledger,
 * sends full paced calls (calls.ts), sends refused and held entries to the dead-letter queue with
 * their reason, acks what is done and retries what the platform certainly did not apply.
 * @module
 */
import type { Enqueue, QueuedEntry } from './handoff.js';
import { AMBIGUOUS_REASON, afterAmbiguous } from '../deliver/policy.js';
import type { Logger } from '../core/logging.js';
import { type CallContext, deliverEntries, deliveryEvent, type Fate, type Sending } from './calls.js';
import type { Claimed, DeliveryLedger } from './delivery.js';
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

export interface ConsumeContext extends Omit<CallContext, 'statuses' | 'sending'> {
  /** which ids of a site were delivered within the window, sharded by id */
  ledger: DeliveryLedger;
  /** the producer binding of the queue's dead-letter queue */
  deadLetters: Queue;
  /** how long a delivered id is remembered (the dedupe window) */
  windowMs: number;
  /** whose leases these are @default a fresh UUID per batch */
  owner?: string;
}

/** What the dead-letter queue receives: the entry as it was queued, and why it is there. */
export interface DeadLetterMessage extends QueuedEntry {
  reason: string;
  status?: number;
  error?: string;
  /** ms since epoch */
  failed: number;
}

/** A lease outlives the batch's deadline by this much, so the settle that follows the last call still finds it. */
const LEASE_MARGIN_MS = 30_000;

/**
 * Delivers one batch of queued entries; every message is acked or retried. Ids are checked
 * where they are already batched: one ledger call per shard touched, per site. An id delivered
 * or dead-lettered within the window (a redelivered message, a browser's resend under any
 * `queue`) is acked without a call; one another consumer holds is retried after its lease; one
 * whose earlier send may have reached the platform is held as a dead letter (activities) or sent
 * again (merges). A send is counted in the ledger right before each call, on that call's ids only;
 * the ledger is settled before any ack: a consumer that dies leaves leases that make the
 * redelivery of its calls in flight hold, not resend, and the rest of its batch go as new.
 */
export async function consumeQueue(batch: MessageBatch<QueuedEntry>, ctx: ConsumeContext, logger: Logger): Promise<void> {
  const started = ctx.clock.now();
  const owner = ctx.owner ?? crypto.randomUUID();
  const leaseMs = ctx.deadline - started + LEASE_MARGIN_MS;
  const counts: Record<string, number> = {};
  const count = (what: string) => {
    counts[what] = (counts[what] ?? 0) + 1;
  };
  const warnings: string[] = [];
  const fates = new Map<object, Fate>();
  /** messages acked or retried without being claimed (duplicates in the batch, busy, failed claims) */
  const untouched = new Map<QueueMessage<QueuedEntry>, { retry?: number }>();

  const bySite = new Map<string, QueueMessage<QueuedEntry>[]>();
  for (const message of batch.messages) {
    const list = bySite.get(message.body.site);
    if (list) list.push(message);
    else bySite.set(message.body.site, [message]);
  }
  const claimed: QueueMessage<QueuedEntry>[] = [];
  const going: Sending[] = [];
  for (const [site, messages] of bySite) {
    const first = new Map<string, QueueMessage<QueuedEntry>>();
    for (const message of messages) {
      // The same id twice in one batch: the first copy carries it (and goes back to the queue if it must).
      if (first.has(message.body.id)) {
        count('duplicate');
        untouched.set(message, {});
      } else first.set(message.body.id, message);
    }
    let claims: Map<string, Claimed>;
    try {
      claims = await ctx.ledger.claim(site, [...first.keys()], owner, started, leaseMs, ctx.windowMs);
    } catch (error) {
      warnings.push(`state_claim_failed: ${describe(error)}`);
      for (const message of first.values()) untouched.set(message, { retry: 5 });
      continue;
    }
    for (const [id, message] of first) {
      const claim = claims.get(id);
      if (claim === 'done') {
        count('duplicate');
        untouched.set(message, {});
      } else if (claim === 'busy' || claim === undefined) {
        count('busy');
        untouched.set(message, { retry: Math.ceil(leaseMs / 1000) });
      } else {
        claimed.push(message);
        if (claim === 'attempted' && afterAmbiguous(message.body.endpoint, ctx.policy) === 'hold') {
          fates.set(message, { kind: 'dead', reason: AMBIGUOUS_REASON, error: 'an earlier delivery of this entry ended without an answer' });
        } else going.push({ key: message, body: message.body });
      }
    }
  }

  const heldAtClaim = claimed.filter((message) => fates.has(message));
  if (heldAtClaim.length > 0) {
    const entries = heldAtClaim.map((message) => ({ key: message, body: message.body }));
    ctx.observe?.(deliveryEvent(ctx, { endpoint: 'activities/create', entries }, fates, 0, false));
  }
  const statuses: number[] = [];
  /** Marks a call's entries sending in the ledger, per site: what a dead consumer leaves attempted is its calls in flight. */
  const sending = async (entries: readonly Sending[]): Promise<Set<object>> => {
    const marked = new Set<object>();
    for (const site of new Set(entries.map((entry) => entry.body.site))) {
      const ofSite = entries.filter((entry) => entry.body.site === site);
      const ids = await ctx.ledger.sending(
        site,
        ofSite.map((entry) => entry.body.id),
        owner,
        ctx.clock.now(),
      );
      for (const entry of ofSite) if (ids.has(entry.body.id)) marked.add(entry.key);
    }
    return marked;
  };
  for (const [key, fate] of await deliverEntries({ ...ctx, statuses, sending }, going)) fates.set(key, fate);

  // Dead letters first: an entry the dead-letter queue did not take stays leased and comes back.
  const dead = claimed.filter((message) => fates.get(message)?.kind === 'dead');
  const unsent = new Set<QueueMessage<QueuedEntry>>();
  for (let from = 0; from < dead.length; from += 100) {
    const part = dead.slice(from, from + 100);
    try {
      await ctx.deadLetters.sendBatch(
        part.map((message) => ({ body: deadLetter(message.body, fates.get(message) as Fate & { kind: 'dead' }, ctx.clock.now()) })),
      );
    } catch (error) {
      warnings.push(`dead_letter_send_failed: ${describe(error)}`);
      for (const message of part) unsent.add(message);
    }
  }

  const until = ctx.clock.now() + ctx.windowMs;
  const settleFailed = new Set<string>();
  for (const [site, messages] of bySite) {
    const settlement = { delivered: [] as string[], dead: [] as string[], released: [] as string[] };
    for (const message of messages) {
      const fate = fates.get(message);
      if (!fate || unsent.has(message)) continue;
      (fate.kind === 'delivered' ? settlement.delivered : fate.kind === 'dead' ? settlement.dead : settlement.released).push(message.body.id);
    }
    if (settlement.delivered.length + settlement.dead.length + settlement.released.length === 0) continue;
    try {
      const skipped = await ctx.ledger.settle(site, owner, settlement, until);
      if (skipped > 0) warnings.push(`state_settle_skipped: ${skipped} leases were no longer this consumer's`);
    } catch (error) {
      // The platform has what was delivered: acked anyway. The leases stay, so a copy of these
      // entries is held (activities) or resent (merges) when they run out, never sent blindly.
      warnings.push(`state_settle_failed: ${describe(error)}`);
      settleFailed.add(site);
    }
  }

  for (const [message, { retry }] of untouched) {
    if (retry === undefined) message.ack();
    else message.retry({ delaySeconds: retry });
  }
  for (const message of claimed) {
    const fate = fates.get(message)!;
    if (fate.kind === 'released' || unsent.has(message)) {
      count('retry');
      message.retry({ delaySeconds: fate.kind === 'released' ? fate.delaySeconds : 5 });
      continue;
    }
    count(fate.kind === 'delivered' ? 'delivered' : fate.reason);
    message.ack();
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
    ...(warnings.length === 0 ? {} : { warning: warnings.join('; ') }),
  });
}

const describe = (error: unknown): string => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

function deadLetter(body: QueuedEntry, fate: Fate & { kind: 'dead' }, now: number): DeadLetterMessage {
  return {
    ...body,
    reason: fate.reason,
    ...(fate.status === undefined ? {} : { status: fate.status }),
    ...(fate.error === undefined ? {} : { error: fate.error }),
    failed: now,
  };
}
