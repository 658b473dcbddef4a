/**
 * The queue's index in memory, with the store (IndexedDB) as its durable copy.
 *
 * - Each item's size is measured once, when it is made.
 * - Writes are gathered for a few milliseconds (while the page is visible) and go as one row
 *   holding all their entries: one transaction and one stored value however many items came,
 *   which is what keeps a burst of calls cheap. Rows written by older snippets (one entry each)
 *   are read the same way.
 * - Items leave their row in a read-modify-write of that row, so what other tabs did to it stays.
 * - The store is read in full only on load and after another tab changed it.
 * @module
 */
import type { Entry, Store } from './types.js';
import { utf8Bytes } from './validate.js';

/** How long writes gather before they go, while the page is visible (hidden: at once). */
export const WRITE_DELAY_MS = 10;

/** One queued item as this page knows it: the stored entry, the bytes of its JSON, its row. */
export interface Queued {
  entry: Entry;
  bytes: number;
  /** key of the stored row that holds it, and the number of the write that stores it; unset until that write begins */
  row?: string | undefined;
  writeNumber?: number | undefined;
}

/** The next write while it gathers: its entries, and the Promise every caller gets. */
interface Gathered {
  waiting: Entry[];
  stored: Promise<void>;
  /** Resolves `stored` as the write's outcome resolves (or at once, with nothing to write). */
  settle: (outcome?: Promise<void>) => void;
}

export interface Queue {
  /** item id -> queued item, oldest first */
  readonly held: Map<string, Queued>;
  /** How many writes have begun: taken before a full read, for `adopt`. */
  readonly writes: number;
  /** Adds `entry` and stores it; resolves once it is in the store (or was dropped first). */
  add(entry: Entry, bytes: number): Promise<void>;
  /** Forgets the items; they leave the store with the next write. */
  remove(ids: string[]): void;
  /** Writes what is gathered now (unless a write is in flight: then right after it); resolves once all of it is stored. */
  settle(): Promise<void>;
  /**
   * Makes the index what the store holds: `rows` read once `writes` had begun. Items of this page
   * whose write began later stay; items this page took out never come back, whenever their
   * removal is written. Returns the values of rows that hold no entries (they leave the store with the next write).
   */
  adopt(rows: [IDBValidKey, unknown][], writes: number): unknown[];
}

const isEntry = (value: unknown): value is Entry => !!(value as Entry)?.item?.ts;

/** The entries of a stored row: an array of them, or one entry as older snippets stored it; `undefined` if neither. */
const entriesOf = (value: unknown): Entry[] | undefined => (Array.isArray(value) && value.length && value.every(isEntry) ? value : undefined);

/** Changes that take the items out of their rows: each row read and rewritten (or deleted once empty) in the transaction. */
const takeOut = (byRow: Map<string, Set<string>>) =>
  [...byRow].map(([row, ids]): [string, (old: unknown) => unknown] => [
    row,
    (old) => {
      const left = entriesOf(old)?.filter((entry) => !ids.has(entry.item.id));
      return left?.length ? left : undefined;
    },
  ]);

/** The oldest entries beyond the `max` newest of `held`: what must go for the queue to hold `max`. */
export function overCap(held: Map<string, Queued>, max: number): Entry[] {
  const over: Entry[] = [];
  for (const { entry } of held.values()) {
    if (held.size - over.length <= max) break;
    over.push(entry);
  }
  return over;
}

/**
 * @param written called after each committed write with the entries it added (maybe none)
 */
export function createQueue(store: Store, written: (entries: Entry[]) => void): Queue {
  let items = new Map<string, Queued>();
  let gathered: Gathered | undefined;
  // row -> ids to take out of it with the next write
  let takenOut = new Map<string, Set<string>>();
  // Ids this page took out of the store since the last full read that saw every removal written:
  // a read that began before a removal was written still holds the item, and must not bring it back.
  const gone = new Set<string>();
  let writing = false;
  let writes = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  /** The next write, planned when it is new (it waits for the one in flight, if any). */
  const next = (): Gathered => {
    if (gathered) return gathered;
    let settle!: Gathered['settle'];
    const stored = new Promise<void>((resolve) => {
      settle = resolve;
    });
    gathered = { waiting: [], stored, settle };
    if (!writing) plan();
    return gathered;
  };

  const plan = () => {
    // A hidden page's timers may be held back for seconds: write at once.
    if (globalThis.document?.visibilityState === 'hidden') queueMicrotask(write);
    else timer = setTimeout(write, WRITE_DELAY_MS);
  };

  const write = () => {
    const batch = gathered;
    if (!batch || writing) return;
    clearTimeout(timer);
    gathered = undefined;
    const changes: [string, unknown][] = takeOut(takenOut);
    takenOut = new Map();
    // Items dropped before their write began are not stored; their callers are answered all the same.
    const entries = batch.waiting.filter((entry) => items.has(entry.item.id));
    if (entries.length) {
      // One row for the whole write, named after its first item (unique, like every item id).
      const row = entries[0]!.item.id;
      for (const entry of entries) Object.assign(items.get(entry.item.id)!, { row, writeNumber: writes });
      changes.unshift([row, entries]);
    }
    if (!changes.length) return batch.settle();
    writing = true;
    writes++;
    const outcome = store.write(changes).then(
      () => written(entries),
      // Even the memory fallback failed: nothing is stored, so say so rather than resolve.
      (error) => {
        for (const entry of entries) items.delete(entry.item.id);
        throw error;
      },
    );
    const done = () => {
      writing = false;
      if (gathered) plan();
    };
    outcome.then(done, done);
    batch.settle(outcome);
  };

  return {
    get held() {
      return items;
    },

    get writes() {
      return writes;
    },

    add(entry, bytes) {
      items.set(entry.item.id, { entry, bytes });
      const batch = next();
      batch.waiting.push(entry);
      return batch.stored;
    },

    remove(ids) {
      for (const id of ids) {
        const row = items.get(id)?.row;
        items.delete(id);
        // Not in a row yet: its write has not begun, and will leave it out.
        if (row) {
          takenOut.set(row, (takenOut.get(row) ?? new Set()).add(id));
          gone.add(id);
        }
      }
      if (takenOut.size) next();
    },

    settle() {
      const { stored } = next();
      write();
      return stored.catch(() => {});
    },

    adopt(rows, readAfter) {
      const found = new Map<string, Queued>();
      const corrupt: unknown[] = [];
      for (const [key, value] of rows) {
        if (key === 'meta') continue;
        const entries = entriesOf(value);
        if (!entries) {
          corrupt.push(value);
          // Deleted with the next write: it holds nothing that could ever be sent.
          takenOut.set(key as string, new Set());
        }
        for (const entry of entries ?? []) {
          const id = entry.item.id;
          // Taken out by this page with a write that began after the read, or has still to begin.
          if (gone.has(id)) continue;
          found.set(id, { entry, bytes: items.get(id)?.bytes ?? utf8Bytes(JSON.stringify(entry.item)), row: key as string });
        }
      }
      // This page's items whose write began after the read (or has still to begin): not in `rows`,
      // but stored (or about to be). Written before and missing: another tab has sent them.
      for (const [id, queued] of items) if (!found.has(id) && (queued.writeNumber ?? readAfter) >= readAfter) found.set(id, queued);
      // Every removal was written before the read began (none waits, no write began since): all
      // are in `rows` already, and no later read can hold one.
      if (readAfter === writes && !takenOut.size) gone.clear();
      items = new Map([...found].sort(([, x], [, y]) => x.entry.n - y.entry.n));
      if (corrupt.length) next();
      return corrupt;
    },
  };
}
