/**
 * The wire: batches of at most 100 items and 64 kB (what `sendBeacon` can carry), posted as
 * `text/plain` JSON so that no CORS preflight is needed.
 * @module
 */
import { type CollectAnswer, COLLECT_LIMITS, type CollectEnvelope } from '../api/collect.js';
import type { Item } from './types.js';

export const MAX_BATCH_ITEMS = COLLECT_LIMITS.items;
export const MAX_BATCH_BYTES = COLLECT_LIMITS.beaconBytes;

/** Splits `items` (with their JSON sizes) into batches that fit `room` bytes and 100 items. */
export function batches<T>(items: [T, number][], room: number): T[][] {
  const out: T[][] = [];
  let used = 0;
  for (const [item, bytes] of items) {
    const last = out[out.length - 1];
    // One more byte per item for the comma between them.
    if (last && last.length < MAX_BATCH_ITEMS && used + bytes < room) {
      last.push(item);
      used += bytes + 1;
    } else {
      out.push([item]);
      used = bytes + 1;
    }
  }
  return out;
}

/** The request body of `POST /collect`: the batch, this browser's queue id and the relay's identity token. */
export const envelope = (key: string, batch: Item[], now: number, queue: string | undefined, identity: string | undefined): string =>
  JSON.stringify({ key, sent_at: new Date(now).toISOString(), batch, identity, queue } satisfies CollectEnvelope);

/** What came back from one post: status (0 = no answer), parsed body, `Retry-After`. */
export type Answer = [status: number, body: Partial<CollectAnswer> & { error?: { message?: string } }, retryAfter?: string | null];

/** Posts one batch; network errors and timeouts come back as status 0, never as a throw. */
export async function post(fetchFn: typeof fetch, url: string, body: string, timeout: number): Promise<Answer> {
  try {
    // A string body goes as text/plain;charset=UTF-8: a simple request, no CORS preflight.
    const res = await fetchFn(url, { method: 'POST', body, keepalive: true, signal: AbortSignal.timeout(timeout) });
    return [res.status, await res.json().catch(() => ({})), res.headers.get('retry-after')];
  } catch (e) {
    return [0, { error: { message: String(e) } }];
  }
}
