/**
 * The in-process store: dedupe ids, leases, token buckets and counters in Maps.
 * Give it a {@link Persistence} (Node: {@link createFileStore}) and forwarded ids and
 * counters survive a restart.
 * @module
 */
import { refill, type Claim, type RelayStore } from './store.js';

/** Where the memory store writes what must outlive the process. */
export interface Persistence {
  /** everything saved before, replayed at start */
  load(): Promise<PersistedEntry[]>;
  /** appends entries; resolves once they are durable */
  append(entries: PersistedEntry[]): Promise<void>;
}

export type PersistedEntry = { kind: 'forwarded'; scope: string; id: string; until: number } | { kind: 'counter'; scope: string; name: string; value: number };

export interface MemoryStore extends RelayStore {
  /** resolves once persisted state is loaded */
  ready: Promise<void>;
}

/** Creates the in-process store, optionally backed by `persistence`. */
export function createMemoryStore(options: { persistence?: Persistence; now?: () => number } = {}): MemoryStore {
  const now = options.now ?? Date.now;
  const forwarded = new Map<string, number>();
  const leases = new Map<string, number>();
  const buckets = new Map<string, { tokens: number; at: number }>();
  const counters = new Map<string, number>();
  const persistence = options.persistence;
  const key = (scope: string, id: string) => `${scope}\u0000${id}`;

  let loaded = persistence === undefined;
  const ready = (async () => {
    for (const entry of (await persistence?.load()) ?? []) {
      if (entry.kind === 'forwarded' && entry.until > now()) forwarded.set(key(entry.scope, entry.id), entry.until);
      if (entry.kind === 'counter') counters.set(key(entry.scope, entry.name), entry.value);
    }
    loaded = true;
  })();

  let swept = 0;
  function sweep(at: number) {
    // Expired ids are dropped at most once a minute: O(n) but rare.
    if (at - swept < 60_000) return;
    swept = at;
    for (const [id, until] of forwarded) if (until <= at) forwarded.delete(id);
    for (const [id, until] of leases) if (until <= at) leases.delete(id);
  }

  return {
    ready,
    async begin(scope, ids, at, leaseMs): Promise<Claim> {
      if (!loaded) await ready;
      sweep(at);
      const claim: Claim = { fresh: [], duplicate: [], busy: [] };
      for (const id of ids) {
        const k = key(scope, id);
        if ((forwarded.get(k) ?? 0) > at) claim.duplicate.push(id);
        else if ((leases.get(k) ?? 0) > at) claim.busy.push(id);
        else {
          leases.set(k, at + leaseMs);
          claim.fresh.push(id);
        }
      }
      return claim;
    },
    async commit(scope, ids, until) {
      if (!loaded) await ready;
      for (const id of ids) {
        forwarded.set(key(scope, id), until);
        leases.delete(key(scope, id));
      }
      await persistence?.append(ids.map((id) => ({ kind: 'forwarded', scope, id, until })));
    },
    async release(scope, ids) {
      for (const id of ids) leases.delete(key(scope, id));
    },
    async take(scope, rate, at) {
      const result = refill(buckets.get(scope), rate, at);
      buckets.set(scope, result.bucket);
      return { ok: result.ok, retryAfterMs: result.retryAfterMs };
    },
    async add(scope, name, amount, limit) {
      if (!loaded) await ready;
      const k = key(scope, name);
      const value = counters.get(k) ?? 0;
      const added = Math.max(0, Math.min(amount, limit - value));
      if (added > 0) {
        counters.set(k, value + added);
        await persistence?.append([{ kind: 'counter', scope, name, value: value + added }]);
      }
      return added;
    },
  };
}
