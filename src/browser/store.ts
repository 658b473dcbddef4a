/**
 * Where the queue lives: IndexedDB through idb-keyval's `createStore`, or a Map when IndexedDB
 * is missing or failing (private mode, quota, blocked).
 * @module
 */
import { createStore, promisifyRequest as done, type UseStore } from 'idb-keyval';
import type { Store } from './types.js';

type Change = (old: unknown) => unknown;

/**
 * The queue of one site key in IndexedDB: database `cdp-edge`, object store `queue`, each row
 * under the key `[siteKey, row]`, so that trackers of two site keys on one origin never see each
 * other's rows. Written over idb-keyval's store handle: one transaction per `write`, whatever it
 * changes.
 */
export function idbStore(siteKey: string): Store {
  let handle: UseStore | undefined;
  let mine: IDBKeyRange;
  // Opened on first use, so that importing or creating a tracker touches nothing.
  const use: UseStore = (mode, callback) => {
    if (!handle) {
      handle = createStore('cdp-edge', 'queue');
      // Every array key sorts after every string: this site key's rows are [siteKey] < key < [siteKey, []].
      mine = IDBKeyRange.bound([siteKey], [siteKey, []]);
    }
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
        // Requests of a transaction are answered in the order they were made: the keys are in when the values are.
        const keys = objects.getAllKeys(mine);
        const values = await done(objects.getAll(mine));
        return keys.result.map((rowKey, index): [IDBValidKey, unknown] => [(rowKey as IDBValidKey[])[1]!, values[index]]);
      }),
    write: (changes) =>
      write((objects) => {
        const set = (rowKey: string[], value: unknown) => (value === undefined ? objects.delete(rowKey) : objects.put(value, rowKey));
        for (const [row, change] of changes) {
          const rowKey = [siteKey, row];
          if (typeof change !== 'function') set(rowKey, change);
          else {
            const request = objects.get(rowKey);
            request.onsuccess = () => set(rowKey, (change as Change)(request.result));
          }
        }
      }),
    clear: () => write((objects) => objects.delete(mine)),
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
