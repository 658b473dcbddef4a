// The relay-wide breaker of platform refusals (deliver/breaker.ts): anonymous browser traffic
// pauses first, calls of proven entries only (signed-in visitors) go on a little longer, the
// proxy keeps its headroom, and what every caller may still risk stays under the platform's ban
// of 15 refused calls in 15 s.
import { describe, expect, it } from 'vitest';
import { BREAKER_LIMITS, createBreaker } from '../../src/relay/deliver/breaker.js';

const refuse = (breaker: ReturnType<typeof createBreaker>, count: number, at: number) => {
  for (let i = 0; i < count; i++) {
    breaker.start('browser');
    breaker.end('browser', 400, at);
  }
};

describe('the breaker of platform refusals', () => {
  it('lets proven calls go past anonymous refusals that hold every other browser call, up to the proven count', () => {
    const breaker = createBreaker();
    refuse(breaker, BREAKER_LIMITS.browser, 0);
    expect(breaker.waitMs('browser', 100)).toBeGreaterThan(0);
    expect(breaker.waitMs('proven', 100)).toBe(0);
    expect(breaker.waitMs('proxy', 100)).toBe(0);
    // Proven calls in flight count as refusals they might draw: at the proven count they wait too.
    for (let i = BREAKER_LIMITS.browser; i < BREAKER_LIMITS.proven; i++) breaker.start('proven');
    expect(breaker.waitMs('proven', 100)).toBe(25);
    breaker.end('proven', 200, 150);
    expect(breaker.waitMs('proven', 150)).toBe(0);
  });

  it('holds proven calls too once refusals reach the proven count, until the oldest ages out; the proxy only at its own', () => {
    const breaker = createBreaker();
    refuse(breaker, BREAKER_LIMITS.proven, 1_000);
    expect(breaker.waitMs('proven', 2_000)).toBe(1_000 + BREAKER_LIMITS.windowMs - 2_000);
    expect(breaker.waitMs('proxy', 2_000)).toBe(0);
    refuse(breaker, BREAKER_LIMITS.proxy - BREAKER_LIMITS.proven, 3_000);
    expect(breaker.waitMs('proxy', 3_000)).toBeGreaterThan(0);
    // The first eleven age out a window after they were drawn: proven calls go again, the proxy too.
    expect(breaker.waitMs('proven', 999 + BREAKER_LIMITS.windowMs)).toBeGreaterThan(0);
    expect(breaker.waitMs('proven', 1_000 + BREAKER_LIMITS.windowMs)).toBe(0);
    expect(breaker.waitMs('proxy', 1_000 + BREAKER_LIMITS.windowMs)).toBe(0);
  });
});
