/**
 * Splits a call with more items than the platform takes (100 per request, 2 MB per body)
 * into several, and joins their answers in input order.
 */
import { jsonBytes, LIMITS, type Chunking } from '../api/index.js';

/** Body overhead kept free in each chunk for the envelope around the items. */
const ENVELOPE_BYTES = 4 * 1024;

/** The bodies to send: `body` with its `chunking.items` array cut to ≤ max items and ≤ the payload limit. */
export function splitBody(body: Record<string, unknown>, chunking: Chunking, maxBytes = LIMITS.payloadBytes): Record<string, unknown>[] {
  const items = body[chunking.items];
  if (!Array.isArray(items) || items.length <= chunking.max && jsonBytes(body) <= maxBytes) return [body];
  const chunks: unknown[][] = [];
  let current: unknown[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = jsonBytes(item) + 1;
    if (current.length > 0 && (current.length >= chunking.max || bytes + size > maxBytes - ENVELOPE_BYTES)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks.map((chunk) => ({ ...body, [chunking.items]: chunk }));
}

/** Joins the answers of the chunks of one call, as the endpoint's `chunking.join` says. */
export function joinResults(results: unknown[], chunking: Chunking): unknown {
  if (results.length === 1) return results[0];
  if (chunking.join.kind === 'concat') {
    const key = chunking.join.result;
    const first = (results[0] ?? {}) as Record<string, unknown>;
    const joined = results.flatMap((result) => ((result as Record<string, unknown> | undefined)?.[key] as unknown[] | undefined) ?? []);
    return { ...first, [key]: joined };
  }
  const sums: Record<string, number> = {};
  for (const result of results) {
    for (const [name, value] of Object.entries((result ?? {}) as Record<string, unknown>)) {
      if (typeof value === 'number') sums[name] = (sums[name] ?? 0) + value;
    }
  }
  return sums;
}
