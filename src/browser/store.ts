/**
 * Where the queue lives: IndexedDB through idb-keyval's `createStore` in its own store, or a
 * Map when IndexedDB is missing or failing (private mode, quota, blocked).
 * @module
 */
import { createStore, promisifyRequest as done, type UseStore } from 'idb-keyval';
import type { Store } from './types.js';

type Change = (old: unknown) => unknown;

/**
 * The queue in IndexedDB: database `cdp-edge`, object store `queue`. Written over idb-keyval's
 * store handle: one transaction per `write`, whatever it changes.
 */
export function idbStore(database = 'cdp-edge', storeName = 'queue'): Store {
  let handle: UseStore | undefined;
  // Opened on first use, so that importing or creating a tracker touches nothing.
  const use: UseStore = (mode, callback) => {
    handle ??= createStore(database, storeName);
    return handle(mode, callback);
  };
  const write = (change: (objects: IDBObjectStore) => void) =>
    use('readwrite', (objects) => {
      change(objects);
      return done(objects.transaction) as Promise<void>;
    });
  return {
    all: () =>
      use('readonly', async (objects) => {
        const [keys, values] = await Promise.all([done(objects.getAllKeys()), done(objects.getAll())]);
        return keys.map((rowKey, index): [IDBValidKey, unknown] => [rowKey, values[index]]);
      }),
    write: (changes) =>
      write((objects) => {
        const set = (rowKey: string, value: unknown) => (value === undefined ? objects.delete(rowKey) : objects.put(value, rowKey));
        for (const [rowKey, change] of changes) {
          if (typeof change !== 'function') set(rowKey, change);
          else {
            const request = objects.get(rowKey);
            request.onsuccess = () => set(rowKey, (change as Change)(request.result));
          }
        }
      }),
    clear: () => write((objects) => objects.clear()),
  };
}

/** The queue in memory, for this page only. */
export function memoryStore(): Store {
  const rows = new Map<string, unknown>();
  return {
    all: async () => [...rows],
    write: async (changes) => {
      for (const [rowKey, change] of changes) {
        const value = typeof change === 'function' ? (change as Change)(rows.get(rowKey)) : change;
        value === undefined ? rows.delete(rowKey) : rows.set(rowKey, value);
      }
    },
    clear: async () => rows.clear(),
  };
}
