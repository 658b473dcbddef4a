/**
 * `createServerTracker`: server-side `track` and `identify` through the relay's door for servers,
 * onto the browsers' path (the relay's dedupe window, outbox and paced delivery, exactly once).
 * Each call's Promise resolves once the relay has answered for its item (`accepted` or `duplicate`:
 * durable there; `rejected`: never). Until then the item is held in memory (and in the spool, when
 * given) and sent again with backoff. One request is in flight at a time; items tracked meanwhile
 * go together in the next. Portable: fetch, Web Crypto and timers only (Node, Deno, Bun, workerd).
 * @module
 */
import { COLLECT_LIMITS, SERVER_COLLECT_PATH } from '../api/collect.js';
import { uuid } from '../browser/uuid.js';
import { sendBatch, type Sent } from './send.js';
import {
  type ServerIdentify,
  type ServerItem,
  type ServerItemOptions,
  type ServerResult,
  type ServerTrack,
  ServerTrackerError,
  type ServerTrackerOptions,
} from './types.js';

export interface ServerTracker {
  /** Sends an activity of a person; resolves with its outcome once final (see {@link ServerResult}). */
  track(item: ServerTrack): Promise<ServerResult>;
  /** Merges a person's fields; resolves with its outcome once final. */
  identify(item: ServerIdentify): Promise<ServerResult>;
  /**
   * Resolves once every item tracked so far is final (for `waitUntil` on serverless). With
   * `timeoutMs`, rejects with a {@link ServerTrackerError} (its `pending`) when that runs out first:
   * the items stay held (and spooled) and keep being tried while the tracker lives.
   */
  flush(options?: { timeoutMs?: number }): Promise<void>;
  /** items not yet final */
  readonly pending: number;
  /** Stops trying; a waiting `flush()` rejects, and items not final stay in the spool (if any) for the next tracker. */
  close(): void;
}

interface Held {
  item: ServerItem;
  waiters: ((result: ServerResult) => void)[];
  /** its spool write, when there is a spool */
  stored: Promise<void> | undefined;
}

/** The envelope's bytes beside its items: what one request may still carry, with room to spare. */
const MAX_BATCH_BYTES = COLLECT_LIMITS.bodyBytes - 4096;
const bytesOf = (item: ServerItem): number => new TextEncoder().encode(JSON.stringify(item)).byteLength + 1;

function checkId(id: string | undefined): string {
  if (id === undefined) return uuid();
  if (typeof id !== 'string' || id.length < 1 || id.length > COLLECT_LIMITS.idChars)
    throw new TypeError(`cdp-edge/server: id must be a string of 1 to ${COLLECT_LIMITS.idChars} characters`);
  return id;
}

function tsOf(ts: ServerItemOptions['ts']): string {
  const at = ts === undefined ? new Date() : new Date(ts);
  if (Number.isNaN(at.getTime())) throw new TypeError('cdp-edge/server: ts must be a Date or an ISO 8601 time');
  return at.toISOString();
}

/** The item with the members left undefined dropped: it carries only what was given. */
const defined = <T extends object>(item: T): T => Object.fromEntries(Object.entries(item).filter(([, value]) => value !== undefined)) as T;

/** `item`, or a TypeError when it is larger than one request may carry (no relay could take it). */
function sized(item: ServerItem): ServerItem {
  if (bytesOf(item) > MAX_BATCH_BYTES) throw new TypeError(`cdp-edge/server: item ${item.id} is larger than one request may carry (${MAX_BATCH_BYTES} bytes)`);
  return item;
}

const trackItem = ({ id, ts, location, activity_id, person, attributes }: ServerTrack): ServerItem =>
  sized(defined({ id: checkId(id), type: 'track' as const, ts: tsOf(ts), activity_id, person, attributes, location }));

const identifyItem = ({ id, ts, location, fields, tags, unset_tags }: ServerIdentify): ServerItem =>
  sized(defined({ id: checkId(id), type: 'identify' as const, ts: tsOf(ts), fields, tags, unset_tags, location }));

/**
 * Creates a tracker for one relay. Make one per process (or per request on Workers) and call
 * `flush()` before the process or request ends.
 *
 * @example
 * const cdp = createServerTracker({ relay: 'https://t.example.com', token: process.env.RELAY_COLLECT_TOKEN });
 * await cdp.track({ id: `order-${order.id}-paid`, activity_id: 'act:cm:order-paid', person: { 'str::email': order.email } });
 */
export function createServerTracker(options: ServerTrackerOptions): ServerTracker {
  const send = {
    url: `${new URL(options.relay).href.replace(/\/+$/, '')}${SERVER_COLLECT_PATH}`,
    token: options.token,
    fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
    timeoutMs: options.timeoutMs ?? 10_000,
  };
  const batchSize = Math.max(1, Math.min(COLLECT_LIMITS.items, options.batchSize ?? COLLECT_LIMITS.items));
  const minBackoff = options.minBackoffMs ?? 250;
  const maxBackoff = options.maxBackoffMs ?? 5000;
  const { spool } = options;
  const held = new Map<string, Held>();
  /** flushes waiting for every item to be final */
  let idle: { resolve: () => void; reject: (error: ServerTrackerError) => void }[] = [];
  let running = false;
  let closed = false;
  let failures = 0;
  let wake: (() => void) | undefined;
  const report = (error: ServerTrackerError) => {
    try {
      options.onError?.(error);
    } catch {
      // a failing logger must not stop delivery
    }
  };

  const hold = (item: ServerItem, stored: Promise<void> | undefined): Held => {
    const entry: Held = { item, waiters: [], stored };
    held.set(item.id, entry);
    return entry;
  };
  // Items a spool kept from an earlier process go first.
  const loaded: Promise<void> = spool
    ? spool.load().then(
        (items) => {
          for (const item of items) if (!held.has(item.id)) hold(item, undefined);
          if (held.size > 0) queueMicrotask(kick);
        },
        (cause) => report(new ServerTrackerError('the spool could not be read; its items wait there', { pending: held.size, cause })),
      )
    : Promise.resolve();

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
    });

  const settle = async (results: readonly ServerResult[]) => {
    if (results.length === 0) return;
    if (spool) {
      try {
        await spool.remove(results.map((result) => result.id));
      } catch (cause) {
        // Left in the spool: a later tracker sends them again and the relay answers `duplicate`.
        report(new ServerTrackerError('final items could not be removed from the spool', { pending: held.size, cause }));
      }
    }
    for (const result of results) {
      const entry = held.get(result.id);
      held.delete(result.id);
      for (const waiter of entry?.waiters ?? []) waiter(result);
    }
  };

  /** The next request's items: oldest first, within the item count and the body's bytes. */
  const nextBatch = (): Held[] => {
    const batch: Held[] = [];
    let bytes = 0;
    for (const entry of held.values()) {
      const size = bytesOf(entry.item);
      if (batch.length === batchSize || (batch.length > 0 && bytes + size > MAX_BATCH_BYTES)) break;
      batch.push(entry);
      bytes += size;
    }
    return batch;
  };

  const waitAfter = (sent: Extract<Sent, { waitMs: number }>) => {
    failures++;
    const backoff = Math.min(maxBackoff, minBackoff * 2 ** (failures - 1)) * (0.5 + Math.random() / 2);
    return Math.max(backoff, sent.waitMs);
  };

  const pump = async () => {
    running = true;
    try {
      await loaded;
      while (held.size > 0 && !closed) {
        const batch = nextBatch();
        for (const entry of batch) {
          if (!entry.stored) continue;
          await entry.stored.catch((cause) =>
            report(new ServerTrackerError('an item could not be spooled; it is held in memory', { pending: held.size, cause })),
          );
          entry.stored = undefined;
        }
        const sent = await sendBatch(
          send,
          batch.map((entry) => entry.item),
        );
        if (sent.kind === 'refused') {
          await settle(batch.map((entry) => ({ id: entry.item.id, status: 'rejected' as const, error: sent.error })));
          continue;
        }
        if (sent.kind === 'answered') await settle(sent.final);
        if (sent.kind === 'answered' && sent.again === 0) {
          failures = 0;
          continue;
        }
        if (sent.kind === 'again') report(new ServerTrackerError(sent.error, { status: sent.status, pending: held.size, cause: sent.cause }));
        if (!closed) await sleep(waitAfter(sent));
      }
    } finally {
      running = false;
      if (held.size === 0) {
        const waiting = idle;
        idle = [];
        for (const flush of waiting) flush.resolve();
      }
    }
  };

  const kick = () => {
    if (running || closed) return;
    running = true;
    // Calls made in the same turn go in one request.
    queueMicrotask(() => void pump());
  };

  const add = (item: ServerItem): Promise<ServerResult> => {
    if (closed) throw new Error('cdp-edge/server: the tracker is closed');
    // The same id while still held (a webhook retried before its first try was answered): one item, one outcome.
    const entry = held.get(item.id) ?? hold(item, spool?.put([item]));
    const result = new Promise<ServerResult>((resolve) => entry.waiters.push(resolve));
    kick();
    return result;
  };

  return {
    track: (input) => add(trackItem(input)),
    identify: (input) => add(identifyItem(input)),
    flush: async ({ timeoutMs } = {}) => {
      await loaded;
      if (held.size === 0) return;
      kick();
      if (closed) throw new ServerTrackerError(`the tracker is closed with ${held.size} items not final`, { pending: held.size });
      const empty = new Promise<void>((resolve, reject) => idle.push({ resolve, reject }));
      if (timeoutMs === undefined) return empty;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new ServerTrackerError(`${held.size} items are not final after ${timeoutMs} ms; they are still held and tried`, { pending: held.size })),
          timeoutMs,
        );
      });
      try {
        await Promise.race([empty, late]);
      } finally {
        clearTimeout(timer);
      }
    },
    get pending() {
      return held.size;
    },
    close: () => {
      closed = true;
      wake?.();
      // A flush waiting for items that will no longer be tried hears so now.
      const waiting = idle;
      idle = [];
      for (const flush of waiting) flush.reject(new ServerTrackerError(`the tracker was closed with ${held.size} items not final`, { pending: held.size }));
    },
  };
}
