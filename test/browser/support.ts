/**
 * A stand-in relay for the snippet's unit tests: an injected `fetch` that records each
 * /collect body and answers per item (accepted unless the test says otherwise).
 */
import { createStore, entries } from 'idb-keyval';
import { createTracker } from '../../src/browser/index.js';
import type { Item, Tracker, TrackerEvents, TrackerOptions } from '../../src/browser/index.js';

export interface Sent {
  url: string;
  body: { key: string; sent_at: string; batch: Item[]; identity?: string; queue?: string };
  bytes: number;
  init: RequestInit;
}

export type Answer = (sent: Sent) => Response | Promise<Response> | { status?: Record<string, string>; identity?: string };

export function fakeRelay(answer?: Answer) {
  const sent: Sent[] = [];
  const fetch = (async (url: string, init: RequestInit) => {
    const text = init.body as string;
    const s: Sent = { url, body: JSON.parse(text), bytes: new TextEncoder().encode(text).length, init };
    sent.push(s);
    const a = (await answer?.(s)) ?? {};
    if (a instanceof Response) return a;
    const results = s.body.batch.map((it) => ({ id: it.id, status: a.status?.[it.id] ?? 'accepted' }));
    return Response.json(a.identity ? { results, identity: a.identity } : { results });
  }) as unknown as typeof globalThis.fetch;
  return { fetch, sent, items: () => sent.flatMap((s) => s.body.batch) };
}

/** The rows of one site key in the snippet's IndexedDB store (`meta` included), keyed as the tracker names them. */
export async function siteRows(key = 'pk_test'): Promise<[string, unknown][]> {
  const rows = await entries(createStore('cdp-edge', 'queue'));
  return rows.flatMap(([k, v]) => (Array.isArray(k) && k[0] === key ? [[k[1] as string, v]] : []));
}

/** Every queued entry of a site key in the snippet's IndexedDB store (not meta or lock). */
export async function queued(key = 'pk_test'): Promise<{ item: Item; a: string; n: number }[]> {
  // A row holds the entries of one write (an older snippet's: one entry, not in an array).
  return (await siteRows(key)).filter(([k]) => k !== 'meta' && k !== 'lock').flatMap(([, v]) => v as never);
}

/**
 * A tracker that never flushes on its own timer, so each test decides when; resolves once its
 * first pass (which runs on load) is over.
 */
export async function tracker(options: Partial<TrackerOptions> = {}, relay = fakeRelay()) {
  const events: { [E in keyof TrackerEvents]: TrackerEvents[E][] } = { queue: [], send: [], result: [], reject: [], drop: [], 'storage-error': [], error: [] };
  const t: Tracker = createTracker({
    relay: 'https://t.example.com',
    key: 'pk_test',
    fetch: relay.fetch,
    sendBeacon: false,
    locks: false,
    flushInterval: 3_600_000,
    ...options,
  });
  for (const e of Object.keys(events) as (keyof TrackerEvents)[]) t.on(e, (p) => (events[e] as unknown[]).push(p));
  await t.flush();
  return { t, relay, events };
}

/** Web Locks as browsers have them, for the `ifAvailable` requests the tracker makes; one per test, shared by its trackers. */
export function webLocks(): LockManager {
  const held = new Set<string>();
  const request = async (name: string, _options: LockOptions, callback: (lock: Lock | null) => Promise<unknown>) => {
    if (held.has(name)) return callback(null);
    held.add(name);
    try {
      return await callback({ name, mode: 'exclusive' });
    } finally {
      held.delete(name);
    }
  };
  return { request } as unknown as LockManager;
}

export const ann = { 'str::email': 'ann@example.com' };
