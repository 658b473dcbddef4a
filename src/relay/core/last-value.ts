/**
 * Values a process (Node) or an isolate (Workers) keeps for all its requests, each loaded again by
 * a request that finds it too old: the copy of the suppression list, the answers of the refusal
 * buckets, the `/readyz` probe's outcome, the snippet, the outbox's pending count. What is kept is the last plain value,
 * never the promise of a load: in workerd a load (a Durable Object call, a fetch) belongs to the
 * request that made it and ends with it when its client goes away, so a request awaiting another
 * request's load could wait for ever, and every later one with it (docs/architecture.md;
 * test/workerd/cut-off.test.ts, refusals-look.test.ts). A request that finds no fresh value
 * loads it itself, or, with `underWayMs`, takes the last value while another's load is under way.
 * Where nothing belongs to a request (Node), `share` lets the requests that find a load under way
 * await it instead, so that the process makes one load at a time.
 * @module
 */

/** A value and the request clock (ms) of the load that gave it. */
export interface Kept<T> {
  value: T;
  at: number;
}

export interface LastValueOptions<T> {
  /** How long a value answers without a load, in ms of the callers' clock. */
  freshMs: number;
  /** Whether `value` answers at all without a load while fresh (a closed bucket is asked again) @default every value */
  trusted?: (value: T) => boolean;
  /**
   * How long another request's load counts as under way (one unanswered by then, its request
   * perhaps cut off, no longer does): meanwhile the last value, when one is less than `standInMs`
   * old, answers instead of a load of one's own. @default none: every request without a fresh
   * value loads
   */
  underWayMs?: number;
  /** How old the last value may be to answer for a load under way @default any age */
  standInMs?: number;
  /** What answers for a load under way before any load has given a value (never fresh) @default none: such a request loads */
  initial?: { value: T };
  /**
   * Node only, never on Workers: a request that finds a load under way, begun less than `freshMs`
   * ago, awaits it instead of loading (one load at a time per process). @default false
   */
  share?: boolean;
  /** Keys remembered at most, the oldest forgotten first (forgetting only loads again) @default 10,000 */
  maxKeys?: number;
}

export interface LastValues<T> {
  /**
   * The value of `key` at `now`: the last one while fresh (or standing in for a load under way,
   * as its `at` tells), else `load()`'s, made by this request. A load that fails keeps nothing and
   * fails this request only. The newest load's value is kept.
   */
  get(key: string, now: number, load: () => Promise<T>): Promise<Kept<T>>;
  /** The last value of `key`, fresh or not, without loading. */
  peek(key: string): Kept<T> | undefined;
  /** Forgets the last value of `key`: the next request loads. */
  forget(key: string): void;
}

/** Sets `key` in `map` as its newest entry, forgetting the oldest past `max`. */
function remember<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > max) map.delete(map.keys().next().value as string);
}

export function createLastValues<T>(options: LastValueOptions<T>): LastValues<T> {
  const { freshMs, trusted, underWayMs, standInMs, initial, share = false, maxKeys = 10_000 } = options;
  const kept = new Map<string, Kept<T>>();
  /** per key, the load under way: when it began and, with `share`, its promise */
  const loading = new Map<string, { at: number; shared?: Promise<Kept<T>> }>();
  return {
    async get(key, now, load) {
      const last = kept.get(key) ?? (initial === undefined ? undefined : { value: initial.value, at: Number.NEGATIVE_INFINITY });
      if (last !== undefined && now - last.at < freshMs && (trusted?.(last.value) ?? true)) return last;
      const under = loading.get(key);
      if (under?.shared !== undefined && now - under.at < freshMs) return under.shared;
      const standsIn = last !== undefined && (standInMs === undefined || now - last.at < standInMs);
      if (under !== undefined && underWayMs !== undefined && standsIn && now - under.at < underWayMs) return last!;
      const mine: { at: number; shared?: Promise<Kept<T>> } = { at: now };
      remember(loading, key, mine, maxKeys);
      const run = (async () => {
        try {
          const fresh = { value: await load(), at: now };
          const newest = kept.get(key);
          if (newest === undefined || newest.at <= now) remember(kept, key, fresh, maxKeys);
          return fresh;
        } finally {
          if (loading.get(key) === mine) loading.delete(key);
        }
      })();
      if (share) mine.shared = run;
      return run;
    },
    peek: (key) => kept.get(key),
    forget(key) {
      kept.delete(key);
    },
  };
}
