/**
 * Forwarding: identify items → `POST /v1/person/merge`, then track items →
 * `POST /v1/activities/create`, chunked to ≤ 100 entries and ≤ 2 MB per call, and the
 * platform's per-entry answers mapped back to per-item results.
 * @module
 */
import type { ItemResult } from '../../api/collect.js';
import { ENDPOINTS, LIMITS, splitBody, type EndpointId } from '../../api/index.js';
import { isRecord } from '../../api/objects.js';
import { sendOnce, type Outcome, type SendContext } from './send.js';
import { MAX_SPLIT_DEPTH, partSize } from './halving.js';
import { entryResult } from './verdict.js';

/** One call's worth of entries: the endpoint, the envelope around them and who they belong to. */
export interface EndpointCall {
  endpoint: 'person/merge' | 'activities/create';
  /** `merge_by`, `merge_strategy`: everything but the entries */
  envelope: Record<string, unknown>;
  entries: { id: string; entry: Record<string, unknown> }[];
  /** a known upper bound of the group's bytes; when well under the limit, no measuring is needed */
  maxBytes?: number;
}

/** What forwarding did: a result per item id, and the longest `retryAfter` asked for. */
export interface Forwarded {
  results: Map<string, ItemResult>;
  retryAfter: number;
}

/** Sends one chunk, cutting a chunk refused as a whole into parts until the bad entries are alone (halving.ts). */
async function sendChunk(ctx: SendContext, group: EndpointCall, chunk: EndpointCall['entries'], out: Forwarded, depth = 0): Promise<void> {
  const itemsKey = group.endpoint === 'person/merge' ? 'people' : 'activities';
  const entries = chunk.map((c) => c.entry);
  const outcome: Outcome = await sendOnce(ctx, group.endpoint as EndpointId, { ...group.envelope, [itemsKey]: entries });
  if (outcome.kind === 'ok') {
    const answers = isRecord(outcome.body) ? outcome.body[itemsKey] : undefined;
    chunk.forEach(({ id }, i) => {
      const result = entryResult(group.endpoint, Array.isArray(answers) && answers.length === chunk.length ? answers[i] : undefined);
      out.results.set(id, result.ok ? { id, status: 'accepted' } : { id, status: 'rejected', error: `the platform refused it: ${result.error}` });
    });
    return;
  }
  if (outcome.kind === 'unavailable') {
    out.retryAfter = Math.max(out.retryAfter, outcome.retryAfter);
    for (const { id } of chunk) out.results.set(id, { id, status: 'retry', error: `${outcome.message}; the item was kept for later` });
    return;
  }
  // Refused as a whole. Per-entry details (a merge where every entry failed) map one to one;
  // otherwise cut the chunk into parts until the bad entries are alone, so good ones still go.
  if (outcome.details.length === chunk.length && chunk.length > 0) {
    chunk.forEach(({ id }, i) => {
      const detail = outcome.details[i];
      const error = isRecord(detail) && typeof detail['error'] === 'string' ? detail['error'] : outcome.message;
      out.results.set(id, { id, status: 'rejected', error: `the platform refused it: ${error}` });
    });
    return;
  }
  if (chunk.length === 1 || depth >= MAX_SPLIT_DEPTH) {
    for (const { id } of chunk) out.results.set(id, { id, status: 'rejected', error: `the platform refused it (${outcome.status}): ${outcome.message}` });
    return;
  }
  const size = partSize(chunk.length, depth);
  for (let from = 0; from < chunk.length; from += size) await sendChunk(ctx, group, chunk.slice(from, from + size), out, depth + 1);
}

/** Sends `groups` in order (identify groups first), each chunked as the platform requires. */
export async function forward(ctx: SendContext, groups: EndpointCall[]): Promise<Forwarded> {
  const out: Forwarded = { results: new Map(), retryAfter: 0 };
  for (const group of groups) {
    if (group.entries.length === 0) continue;
    const chunking = ENDPOINTS[group.endpoint].chunking!;
    // splitBody cuts by count and bytes (measuring {id, entry} pairs slightly overestimates, which is safe);
    // a group known to be far below 2 MB skips the measuring, which is most of the CPU it costs.
    const small = group.entries.length <= chunking.max && group.maxBytes !== undefined && group.maxBytes < LIMITS.payloadBytes / 2;
    const chunks = small
      ? [group.entries]
      : splitBody({ ...group.envelope, [chunking.items]: group.entries }, chunking).map((chunk) => chunk.body[chunking.items] as EndpointCall['entries']);
    for (const chunk of chunks) await sendChunk(ctx, group, chunk, out);
  }
  return out;
}
