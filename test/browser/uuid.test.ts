import { describe, expect, it } from 'vitest';
import { uuid } from '../../src/browser/index.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const timeOf = (id: string) => Number.parseInt(id.replace('-', '').slice(0, 12), 16);

describe('uuid', () => {
  it('is a version 7 UUID, unique', () => {
    const ids = new Set(Array.from({ length: 1000 }, uuid));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(V7);
  });

  it('starts with the time in milliseconds, so ids made later sort after earlier ones', async () => {
    const before = Date.now();
    const first = uuid();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = uuid();
    const after = Date.now();
    expect(timeOf(first)).toBeGreaterThanOrEqual(before);
    expect(timeOf(second)).toBeLessThanOrEqual(after);
    expect(timeOf(second)).toBeGreaterThan(timeOf(first));
    expect(second > first).toBe(true);
  });

  it('has random bits beyond the time: ids of the same millisecond differ in their last 74 bits', () => {
    const now = Date.now;
    Date.now = () => 1_764_000_000_000;
    try {
      const ids = Array.from({ length: 200 }, uuid);
      expect(new Set(ids.map((id) => id.slice(14))).size).toBe(200);
      // Every digit after the version is random (the variant's only in part): each takes many values.
      for (const index of [15, 16, 17, 20, 21, 22, 24, 35]) expect(new Set(ids.map((id) => id[index])).size, `digit ${index}`).toBeGreaterThan(8);
      expect(new Set(ids.map((id) => id[19]))).toEqual(new Set(['8', '9', 'a', 'b']));
      expect(new Set(ids.map(timeOf))).toEqual(new Set([1_764_000_000_000]));
    } finally {
      Date.now = now;
    }
  });

  it('works outside secure contexts, where crypto.randomUUID is missing', () => {
    Object.defineProperty(crypto, 'randomUUID', { value: undefined, configurable: true });
    try {
      const a = uuid();
      const b = uuid();
      expect(a).toMatch(V7);
      expect(a).not.toBe(b);
    } finally {
      delete (crypto as { randomUUID?: unknown }).randomUUID;
    }
    expect(typeof crypto.randomUUID).toBe('function');
  });
});
