// The memory outbox's remembered ids (state/memory-ids.ts) answer as the Map of each id's 16-byte
// string they replace did: the same ends, forgotten in the same order, through growth and windows
// that change.
import { describe, expect, it } from 'vitest';
import { compactIdString } from '../../src/relay/state/ids.js';
import { IdWindow } from '../../src/relay/state/memory-ids.js';

/** The Map the outbox kept before: an id remembered again goes after the others; forgetting walks from the first. */
class MapWindow {
  private ids = new Map<string, number>();
  get size() {
    return this.ids.size;
  }
  look(id: string) {
    return this.ids.get(compactIdString(id));
  }
  remember(id: string, until: number) {
    const key = compactIdString(id);
    this.ids.delete(key);
    this.ids.set(key, until);
  }
  forget(now: number) {
    for (const [key, until] of this.ids) {
      if (until > now) break;
      this.ids.delete(key);
    }
  }
}

/** A deterministic sequence of numbers in [0, 1). */
const numbers = (seed: number) => () => {
  seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
  return seed / 0x1_0000_0000;
};
const uuidOf = (n: number) => `00000000-0000-7000-8000-${n.toString(16).padStart(12, '0')}`;

describe('IdWindow', () => {
  it('finds an id in any of its spellings, and ids that are not UUIDs', () => {
    const ids = new IdWindow();
    expect(ids.look('0190a7c2-1b2c-7d3e-8f40-123456789abc')).toBeUndefined();
    ids.remember(1_000);
    expect(ids.look('0190A7C21B2C7D3E8F40123456789ABC')).toBe(1_000);
    expect(ids.look('order-17')).toBeUndefined();
    ids.remember(2_000);
    expect(ids.look('order-17')).toBe(2_000);
    expect(ids.look('order-18')).toBeUndefined();
    expect(ids.size).toBe(2);
  });

  it('forgets the oldest first, up to the first not due, and keeps the rest through its growth', () => {
    const ids = new IdWindow();
    for (let n = 0; n < 50_000; n++) {
      ids.look(uuidOf(n));
      ids.remember(1_000 + n);
    }
    ids.forget(1_000 + 24_999);
    expect(ids.size).toBe(25_000);
    expect(ids.look(uuidOf(24_999))).toBeUndefined();
    expect(ids.look(uuidOf(25_000))).toBe(26_000);
    expect(ids.look(uuidOf(49_999))).toBe(50_999);
  });

  it('keeps an id remembered again (a shorter window before) until its new end', () => {
    const ids = new IdWindow();
    ids.look(uuidOf(1));
    ids.remember(100);
    ids.look(uuidOf(2));
    ids.remember(50);
    // The first is not due at 60, so the second is not forgotten yet: it is seen past its end.
    ids.forget(60);
    expect(ids.look(uuidOf(2))).toBe(50);
    ids.remember(200);
    ids.forget(150);
    expect(ids.look(uuidOf(1))).toBeUndefined();
    expect(ids.look(uuidOf(2))).toBe(200);
    expect(ids.size).toBe(1);
  });

  it('answers as the Map did over random looks, remembers and forgets', () => {
    const random = numbers(7);
    const ids = new IdWindow();
    const reference = new MapWindow();
    let now = 1;
    let differ = 0;
    for (let step = 0; step < 60_000; step++) {
      now += Math.floor(random() * 3);
      // Ids from a pool small enough to come back, in both spellings, some of them not UUIDs.
      const n = Math.floor(random() * 6_000);
      const id = n % 7 === 0 ? `id-${n}` : random() < 0.5 ? uuidOf(n) : uuidOf(n).replaceAll('-', '').toUpperCase();
      if (step % 97 === 0) {
        ids.forget(now);
        reference.forget(now);
        if (ids.size !== reference.size) differ++;
      }
      const until = ids.look(id);
      if (until !== reference.look(id)) differ++;
      if (until === undefined || until <= now) {
        // Mostly one window; now and then a shorter one.
        const end = now + (random() < 0.05 ? 500 : 5_000);
        ids.remember(end);
        reference.remember(id, end);
      }
    }
    expect(differ).toBe(0);
    expect(ids.size).toBe(reference.size);
  });
});
