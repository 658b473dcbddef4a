import { describe, expect, it } from 'vitest';
import { retryAfterSeconds, tryInSeconds } from '../../src/api/index.js';

const now = Date.parse('2026-11-24T12:00:00Z');

describe('retryAfterSeconds', () => {
  it('reads whole and fractional seconds, 0 included', () => {
    expect(retryAfterSeconds('0', now)).toBe(0);
    expect(retryAfterSeconds('7', now)).toBe(7);
    expect(retryAfterSeconds(' 1.5 ', now)).toBe(1.5);
  });
  it('reads an HTTP date relative to now, never negative', () => {
    expect(retryAfterSeconds('Tue, 24 Nov 2026 12:00:30 GMT', now)).toBe(30);
    expect(retryAfterSeconds('Tue, 24 Nov 2026 11:00:00 GMT', now)).toBe(0);
  });
  it('gives undefined for nothing or nonsense', () => {
    expect(retryAfterSeconds(null, now)).toBeUndefined();
    expect(retryAfterSeconds('', now)).toBeUndefined();
    expect(retryAfterSeconds('soon', now)).toBeUndefined();
    expect(retryAfterSeconds('-3', now)).toBeUndefined();
  });
});

describe('tryInSeconds', () => {
  it("prefers the body's try-in-seconds", () => {
    expect(tryInSeconds({ error: { 'try-in-seconds': 3 } }, '9', now)).toBe(3);
    expect(tryInSeconds({ error: { 'try-in-seconds': 0 } }, '9', now)).toBe(0);
  });
  it('falls back to Retry-After, then to the fallback', () => {
    expect(tryInSeconds({ error: {} }, '9', now)).toBe(9);
    expect(tryInSeconds('not json', null, now)).toBe(1);
    expect(tryInSeconds(undefined, null, now, 5)).toBe(5);
    expect(tryInSeconds({ error: { 'try-in-seconds': 'x' } }, null, now)).toBe(1);
  });
});
