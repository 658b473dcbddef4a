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
    put: (rows) =>
      write((objects) => {
        // `undefined` deletes: a write can drop the oldest items in the same transaction.
        for (const [rowKey, value] of rows) value === undefined ? objects.delete(rowKey) : objects.put(value, rowKey);
      }),
    del: (keys) =>
      write((objects) => {
        for (const rowKey of keys) objects.delete(rowKey);
      }),
    clear: () => write((objects) => objects.clear()),
    update: (rowKey, change) =>
      write((objects) => {
        const request = objects.get(rowKey);
        request.onsuccess = () => objects.put(change(request.result), rowKey);
      }),
  };
}

/** The queue in memory, for this page only. */
export function memoryStore(): Store {
  const rows = new Map<string, unknown>();
  return {
    all: async () => [...rows],
    put: async (entries) => {
      for (const [rowKey, value] of entries) value === undefined ? rows.delete(rowKey) : rows.set(rowKey, value);
    },
    del: async (keys) => {
      for (const rowKey of keys) rows.delete(rowKey);
    },
    clear: async () => rows.clear(),
    update: async (rowKey, change) => {
      rows.set(rowKey, change(rows.get(rowKey)));
    },
  };
}
