/**
 * Splitting a call with more items than the platform takes (100 per request, 2 MB per body)
 * into several, and joining their answers in input order. The client, the relay's proxy
 * (`?chunk=true`) and the relay's `/collect` forwarding all cut and join the same way.
 *
 * @example
 * const chunks = splitBody({ people }, ENDPOINTS['person/merge'].chunking); // ≤100 people, ≤2 MB each
 * joinAnswers(chunking, answers) // { people: [...all results, in input order] }
 * @module
 */
import type { Chunking, EndpointId } from './endpoints.js';
import { ENDPOINTS } from './endpoints.js';
import { jsonBytes, LIMITS } from './limits.js';
import { validateRequest, type ValidationIssue } from './validate.js';
import { isRecord } from './objects.js';

/** One request's worth of items: `body` with its item array cut to `from … from + count - 1`. */
export interface Chunk {
  from: number;
  count: number;
  body: Record<string, unknown>;
}

/** Body overhead kept free in each chunk for the envelope around the items. */
const ENVELOPE_BYTES = 4 * 1024;

/** Cuts `body`'s `chunking.items` array into chunks of ≤ `chunking.max` items and ≤ `maxBytes` each. */
export function splitBody(body: Record<string, unknown>, chunking: Chunking, maxBytes: number = LIMITS.payloadBytes): Chunk[] {
  const items = body[chunking.items];
  if (!Array.isArray(items)) return [{ from: 0, count: 0, body }];
  if (items.length <= chunking.max && jsonBytes(body) <= maxBytes) return [{ from: 0, count: items.length, body }];
  const chunks: Chunk[] = [];
  let from = 0;
  let bytes = 0;
  for (let index = 0; index < items.length; index++) {
    const size = jsonBytes(items[index]) + 1;
    const count = index - from;
    if (count > 0 && (count >= chunking.max || bytes + size > maxBytes - ENVELOPE_BYTES)) {
      chunks.push({ from, count, body: { ...body, [chunking.items]: items.slice(from, index) } });
      from = index;
      bytes = 0;
    }
    bytes += size;
  }
  chunks.push({ from, count: items.length - from, body: { ...body, [chunking.items]: items.slice(from) } });
  return chunks;
}

/** Joins the answers of one call's chunks: the result array concatenated in order, integers added, anything else from the first. */
export function joinAnswers(chunking: Chunking, answers: readonly unknown[]): Record<string, unknown> {
  const joined: Record<string, unknown> = {};
  const result = chunking.join.kind === 'concat' ? chunking.join.result : undefined;
  for (const answer of answers) {
    if (!isRecord(answer)) continue;
    for (const [key, value] of Object.entries(answer)) {
      const before = joined[key];
      if (key === result && Array.isArray(value)) joined[key] = Array.isArray(before) ? [...before, ...value] : [...value];
      else if (typeof value === 'number' && typeof before === 'number') joined[key] = before + value;
      else if (!(key in joined)) joined[key] = value;
    }
  }
  return joined;
}

/**
 * A merge whose entries all failed is a 400 whose `details` hold one `{status, error}` per entry
 * (docs/platform.md). Inside a larger call those are that chunk's results, not a failure of the call.
 * @returns the chunk's answer built from the details, or `undefined` when it is a real failure
 */
export function failedEntries(chunking: Chunking, chunk: Chunk, status: number, answer: unknown): Record<string, unknown> | undefined {
  if (status !== 400 || chunking.join.kind !== 'concat' || !isRecord(answer)) return undefined;
  const details = answer['details'];
  if (!Array.isArray(details) || details.length !== chunk.count) return undefined;
  return { [chunking.join.result]: details };
}

/** Issues of every chunk, renumbered to the caller's array (`people[3]` of a chunk from 100 is `people[103]`). */
export function validateChunks(id: EndpointId, chunks: readonly Chunk[]): ValidationIssue[] {
  const key = ENDPOINTS[id].chunking?.items ?? '';
  const renumber = (text: string, from: number) => text.replace(new RegExp(`^${key}\\[(\\d+)\\]`), (_, index: string) => `${key}[${Number(index) + from}]`);
  return chunks.flatMap((chunk) => {
    const result = validateRequest(id, chunk.body);
    return result.ok ? [] : result.issues.map((issue) => ({ path: renumber(issue.path, chunk.from), message: renumber(issue.message, chunk.from) }));
  });
}
