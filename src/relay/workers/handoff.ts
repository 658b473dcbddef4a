/**
 * The Workers hand-offs, on the Durable Object store's claim and settle: ids are leased, handed
 * on, and marked once taken.
 * - {@link queueHandoff}: accepted entries go to Cloudflare Queues; the consumer delivers them.
 * - {@link inlineHandoff}: without a queue, the request forwards its own items to the platform
 *   within its time budget and answers with the platform's outcome.
 * @module
 */
import type { ItemResult } from '../../api/collect.js';
import type { Clock } from '../core/clock.js';
import type { RelayConfig } from '../core/config.js';
import type { Upstream } from '../deliver/caller.js';
import { forward, type EndpointCall } from '../deliver/calls.js';
import type { EntryKind } from '../state/outbox.js';
import { ENTRY_KINDS } from '../ingest/identity-rules.js';
import { platformCall } from '../deliver/batch.js';
import { REMEMBER_MARGIN_MS, type Handoff, type Prepared } from '../ingest/handoff.js';
import type { DedupeScope, RelayStore } from '../state/store.js';

/** An accepted entry handed to a queue (Workers Queues). */
export interface QueuedEntry {
  site: string;
  id: string;
  endpoint: EndpointCall['endpoint'];
  envelope: Record<string, unknown>;
  entry: Record<string, unknown>;
}

/** What a queue producer took: the ids of every batch it sent, and why it stopped when it did not send them all. */
export interface Enqueued {
  taken: string[];
  failure?: unknown;
}

/** Hands entries to a queue; never throws: a failure comes back as `failure`, beside what was taken before it. */
export type Enqueue = (entries: QueuedEntry[]) => Promise<Enqueued>;

const describe = (error: unknown): string => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

/** The calls `items` make: merges (overwrite), merges (create only), then activities. */
function groupsOf(items: readonly Prepared[], mergeBy: string[], maxBytes: number): EndpointCall[] {
  const groups = new Map<EntryKind, EndpointCall>(ENTRY_KINDS.map((kind) => [kind, { ...platformCall(kind, mergeBy), entries: [], maxBytes }]));
  for (const item of items) groups.get(item.kind)!.entries.push({ id: item.id, entry: item.entry });
  return [...groups.values()];
}

/** Leases the ids of `items`; answers those forwarded already `duplicate` and those leased elsewhere `retry`. */
async function claimed(store: RelayStore, scope: DedupeScope, items: Prepared[], now: number, leaseMs: number, results: Map<string, ItemResult>) {
  const claim = await store.claim(
    scope,
    items.map((item) => item.id),
    now,
    leaseMs,
  );
  const fresh = new Set(claim.fresh);
  const duplicate = new Set(claim.duplicate);
  for (const item of items) {
    if (duplicate.has(item.id)) results.set(item.id, { id: item.id, status: 'duplicate' });
    else if (!fresh.has(item.id)) results.set(item.id, { id: item.id, status: 'retry', error: 'another request is handling this item right now' });
  }
  return items.filter((item) => fresh.has(item.id));
}

/**
 * Workers Queues: what the queue took is accepted. Ids are checked where they are already batched,
 * in the consumer, against the site's delivery ledger (queue.ts), so /collect makes no state call.
 */
export function queueHandoff(enqueue: Enqueue): Handoff {
  return async ({ site, items, bytes }) => {
    const results = new Map<string, ItemResult>();
    const entries = groupsOf(items, site.mergeBy, bytes + items.length * 1024).flatMap((group) =>
      group.entries.map(({ id, entry }) => ({ site: site.key, id, endpoint: group.endpoint, envelope: group.envelope, entry })),
    );
    // What the queue took is accepted, even when a later batch failed; only what it did not take is retried.
    const { taken, failure } = await enqueue(entries);
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

export interface InlineOptions {
  store: RelayStore;
  upstream: Upstream;
  clock: Clock;
  random: () => number;
  config: RelayConfig;
  /** told of the shapes the platform took, per site (shapes.ts) */
  learn?: (site: string, shapes: string[], now: number) => void;
}

/** Without a queue: the request forwards its items itself, within `RELAY_BUDGET_MS`, and answers with the outcome. */
export function inlineHandoff({ store, upstream, clock, random, config, learn }: InlineOptions): Handoff {
  const handoff: Handoff = async ({ site, items, now, bytes, queue }) => {
    const results = new Map<string, ItemResult>();
    const scope = { site: site.key, queue };
    // A lease outlives the longest a request can hold it (its platform budget) with room for a slow settle.
    const going = await claimed(store, scope, items, now, config.budgetMs + 10_000, results);
    if (going.length === 0) return { results };
    const statuses: number[] = [];
    const forwarded = await forward(
      { upstream, clock, deadline: now + config.budgetMs, random, statuses },
      groupsOf(going, site.mergeBy, bytes + going.length * 1024),
    );
    learn?.(
      site.key,
      going.filter((item) => forwarded.results.get(item.id)?.status === 'accepted').map((item) => item.shape),
      clock.now(),
    );
    const accepted: string[] = [];
    const unsent: string[] = [];
    for (const item of going) {
      const result = forwarded.results.get(item.id) ?? { id: item.id, status: 'retry' as const, error: 'not sent' };
      results.set(item.id, result.status === 'rejected' ? { ...result, reason: 'platform' } : result);
      (result.status === 'accepted' ? accepted : unsent).push(item.id);
    }
    // Marked forwarded only now that the platform took them. The platform has them either way, so a failing
    // store must not turn `accepted` into an error: the leases run out and the failure is logged.
    let warning: string | undefined;
    try {
      await store.settle(scope, { forwarded: accepted, until: clock.now() + config.windowMs + REMEMBER_MARGIN_MS, released: unsent });
    } catch (error) {
      warning = `state_settle_failed: ${describe(error)}`;
    }
    return { results, retryAfter: forwarded.retryAfter, upstream: statuses, ...(warning === undefined ? {} : { warning }) };
  };
  handoff.waitsForPlatform = true;
  return handoff;
}
