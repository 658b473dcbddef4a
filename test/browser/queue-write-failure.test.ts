import { describe, expect, it } from 'vitest';
import { type Entry, memoryStore, type Store } from '../../src/browser/index.js';
import { createQueue } from '../../src/browser/queue.js';
import { ann } from './support.js';

const entry = (id: string, n: number): Entry => ({ item: { id, type: 'identify', ts: new Date().toISOString(), fields: ann }, a: 'anon', n });

/** A memory store whose next writes fail with the reasons in `failures`, in order (the tracker's memory fallback failing too). */
function failingStore(failures: unknown[]) {
  const inner = memoryStore();
  const store: Store = {
    all: () => inner.all(),
    write: (changes) => (failures.length ? Promise.reject(failures.shift()) : inner.write(changes)),
    clear: () => inner.clear(),
  };
  return { store, inner };
}

describe('a write the store refuses', () => {
  it('rejects the Promise of each item it held, with the store’s error, and forgets them; the next write goes', async () => {
    const quota = new DOMException('The quota has been exceeded.', 'QuotaExceededError');
    const { store, inner } = failingStore([quota]);
    const written: string[][] = [];
    const queue = createQueue(store, (entries) => written.push(entries.map((e) => e.item.id)));
    const first = queue.add(entry('a', 1), 100);
    const second = queue.add(entry('b', 2), 100);
    await expect(first).rejects.toBe(quota);
    await expect(second).rejects.toBe(quota);
    expect([...queue.held.keys()]).toEqual([]);
    expect(written).toEqual([]);
    // The queue is not left waiting on the failed write.
    await queue.add(entry('c', 3), 100);
    expect([...queue.held.keys()]).toEqual(['c']);
    expect(written).toEqual([['c']]);
    expect((await inner.all()).flatMap(([, value]) => value as Entry[]).map((e) => e.item.id)).toEqual(['c']);
  });

  it('rejects even when the store gives no reason: an item not stored never resolves as stored', async () => {
    const { store } = failingStore([undefined]);
    const queue = createQueue(store, () => {});
    let outcome = 'pending';
    await queue.add(entry('a', 1), 100).then(
      () => (outcome = 'resolved'),
      () => (outcome = 'rejected'),
    );
    expect(outcome).toBe('rejected');
    expect(queue.held.size).toBe(0);
  });
});
