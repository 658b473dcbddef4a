/**
 * The wire: batches of at most 100 items and 64 kB (what `sendBeacon` can carry), posted as
 * `text/plain` JSON so that no CORS preflight is needed.
 * @module
 */
import type { CollectEnvelope } from '../api/collect.js';
import type { Item, Meta } from './types.js';

export const MAX_BATCH_ITEMS = 100;
export const MAX_BATCH_BYTES = 64 * 1024;

/** One per-item answer of the relay (the /collect contract, docs/architecture.md). */
export interface Result {
  id: string;
  status: 'accepted' | 'duplicate' | 'rejected' | 'retry';
  error?: string;
}

/** Splits `items` (with their JSON sizes) into batches that fit `room` bytes and 100 items. */
export function batches<T>(items: [T, number][], room: number): T[][] {
  const out: T[][] = [];
  let bytes = 0;
  for (const [it, n] of items) {
    const last = out[out.length - 1];
    if (last && last.length < MAX_BATCH_ITEMS && bytes + n < room) last.push(it), (bytes += n + 1);
    else out.push([it]), (bytes = n + 1);
  }
  return out;
}

/** The request body of `/collect`, with the relay's identity token when there is one and this browser's queue id. */
export const envelope = (key: string, batch: Item[], now: number, meta: Pick<Meta, 'i' | 'q'>): string =>
  JSON.stringify({ key, sent_at: new Date(now).toISOString(), batch, identity: meta.i, queue: meta.q } satisfies CollectEnvelope);

/** What came back from one post: status (0 = no answer), parsed body, `Retry-After`. */
export type Answer = [status: number, body: { results?: Result[]; identity?: string; error?: { message?: string } }, retryAfter?: string | null];

/** Posts one batch; network errors and timeouts come back as status 0, never as a throw. */
export async function post(fetchFn: typeof fetch, url: string, body: string, timeout: number): Promise<Answer> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error('timeout')), timeout);
  try {
    // A string body goes as text/plain;charset=UTF-8: a simple request, no CORS preflight.
    const res = await fetchFn(url, { method: 'POST', body, keepalive: true, signal: abort.signal });
    return [res.status, await res.json().catch(() => ({})), res.headers.get('retry-after')];
  } catch (e) {
    return [0, { error: { message: String(e) } }];
  } finally {
    clearTimeout(timer);
  }
}
