/**
 * The queue's index in memory, with the store (IndexedDB) as its durable copy. Each item's
 * size is measured once, when it is made; writes made while a transaction is in flight share
 * the next one; the store is read in full only on load and after another tab changed it.
 * @module
 */
import type { Entry, Store } from './types.js';
import { utf8Bytes } from './validate.js';

/** One queued item as this page knows it: the stored entry and the bytes of its JSON. */
export interface Queued {
  entry: Entry;
  bytes: number;
}

interface Waiting {
  entry: Entry;
  stored: () => void;
  failed: (error: unknown) => void;
}

export interface Queue {
  /** item id -> queued item, oldest first */
  readonly held: Map<string, Queued>;
  /** Adds `entry` and stores it; resolves once it is in the store. */
  add(entry: Entry, bytes: number): Promise<void>;
  /** Forgets the items and deletes them from the store. */
  remove(ids: string[]): Promise<void>;
  /** Forgets the items and deletes them with the next write (the cap: no transaction of their own). */
  removeWithNextWrite(ids: string[]): void;
  /** Forgets everything, including writes not yet begun; returns the entries of those writes. */
  discard(): Entry[];
  /**
   * Makes the index what the store holds (`rows` read after `readStart`, in µs like `Entry.n`).
   * Items of this page written after the read began stay. Returns the rows that hold no entry.
   */
  adopt(rows: [IDBValidKey, unknown][], readStart: number): [IDBValidKey, unknown][];
}

const isEntry = (value: unknown): value is Entry => !!(value as Entry)?.item?.ts;

/**
 * @param stored called after each committed write with its entries
 */
export function createQueue(store: Store, stored: (entries: Entry[]) => void): Queue {
  let items = new Map<string, Queued>();
  let waiting: Waiting[] = [];
  let deletions: string[] = [];
  let busy = false;

  const write = () => {
    const batch = waiting;
    const deleted = deletions;
    waiting = [];
    deletions = [];
    if (!batch.length && !deleted.length) {
      busy = false;
      return;
    }
    const rows = batch.map(({ entry }): [string, unknown] => [entry.item.id, entry]);
    for (const id of deleted) rows.push([id, undefined]);
    store.put(rows).then(
      () => {
        for (const { stored } of batch) stored();
        if (batch.length) stored(batch.map(({ entry }) => entry));
        write();
      },
      // Even the memory fallback failed: nothing is stored, so say so rather than resolve.
      (error) => {
        for (const { entry, failed } of batch) {
          items.delete(entry.item.id);
          failed(error);
        }
        write();
      },
    );
  };

  return {
    get held() {
      return items;
    },

    add(entry, bytes) {
      items.set(entry.item.id, { entry, bytes });
      return new Promise((stored, failed) => {
        waiting.push({ entry, stored, failed });
        if (busy) return;
        busy = true;
        // Calls made in the same task share the first transaction, later ones the next.
        queueMicrotask(write);
      });
    },

    removeWithNextWrite(ids) {
      for (const id of ids) items.delete(id);
      deletions.push(...ids);
      if (busy) return;
      busy = true;
      queueMicrotask(write);
    },

    remove(ids) {
      for (const id of ids) items.delete(id);
      return ids.length ? store.del(ids) : Promise.resolve();
    },

    discard() {
      const dropped = waiting.map(({ entry }) => entry);
      for (const { stored } of waiting) stored();
      waiting = [];
      items.clear();
      return dropped;
    },

    adopt(rows, readStart) {
      const found = new Map<string, Entry>();
      const corrupt: [IDBValidKey, unknown][] = [];
      for (const [key, value] of rows) {
        if (key === 'meta' || key === 'lock') continue;
        if (isEntry(value)) found.set(value.item.id, value);
        else corrupt.push([key, value]);
      }
      // Written by this page after the read began: not in `rows` yet, but stored (or about to be).
      // Written before and missing: another tab has sent them.
      for (const [id, queued] of items) if (queued.entry.n >= readStart && !found.has(id)) found.set(id, queued.entry);
      const adopted = new Map<string, Queued>();
      for (const entry of [...found.values()].sort((x, y) => x.n - y.n)) {
        const known = items.get(entry.item.id);
        adopted.set(entry.item.id, known ?? { entry, bytes: utf8Bytes(JSON.stringify(entry.item)) });
      }
      items = adopted;
      return corrupt;
    },
  };
}
