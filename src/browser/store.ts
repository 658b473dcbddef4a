/**
 * Where the queue lives: IndexedDB through idb-keyval's `createStore` in its own store, or a
 * Map when IndexedDB is missing or failing (private mode, quota, blocked).
 * @module
 */
import { createStore, promisifyRequest as done, type UseStore } from 'idb-keyval';
import type { Store } from './types.js';

/**
 * The queue in IndexedDB: database `cdp-edge`, object store `queue`. The six verbs are
 * written over idb-keyval's store handle rather than imported one by one: a quarter of the size.
 */
export function idbStore(db = 'cdp-edge', name = 'queue'): Store {
  let use: UseStore | undefined;
  // Opened on first use, so that importing or creating a tracker touches nothing.
  const read = <T>(fn: (s: IDBObjectStore) => Promise<T>) => (use ??= createStore(db, name))('readonly', fn);
  const write = (fn: (s: IDBObjectStore) => unknown) => (use ??= createStore(db, name))('readwrite', (s) => (fn(s), done(s.transaction) as Promise<void>));
  return {
    all: () => read((s) => Promise.all([done(s.getAllKeys()), done(s.getAll())]).then(([k, v]) => k.map((x, i) => [x, v[i]]))),
    put: (e) => write((s) => e.map(([k, v]) => s.put(v, k))),
    del: (k) => write((s) => k.map((x) => s.delete(x))),
    clear: () => write((s) => s.clear()),
    update: (k, fn) =>
      write(
        (s) =>
          (s.get(k).onsuccess = function () {
            s.put(fn(this.result), k);
          }),
      ),
  };
}

/** The queue in memory, for this page only. */
export function memoryStore(): Store {
  const m = new Map<string, unknown>();
  const ok = async (x?: unknown): Promise<any> => x;
  return {
    all: () => ok([...m]),
    put: (e) => ok(e.map(([k, v]) => m.set(k, v))),
    del: (k) => ok(k.map((x) => m.delete(x))),
    clear: () => ok(m.clear()),
    update: (k, fn) => ok(m.set(k, fn(m.get(k)))),
  };
}
