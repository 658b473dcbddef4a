/**
 * Finding the bad entries of a call the platform refused as a whole without saying which: the
 * call is cut into about √n parts, and a refused part into single entries. One bad entry among
 * 100 then costs 3 refused calls (the call, its part, the entry), where halving cost 8: the
 * platform bans a key after 15 refused calls in 15 s, and the relay's breaker pauses browser
 * deliveries at 8 (breaker.ts), so finding one bad entry never trips it by itself. The parts go
 * as ordinary calls, in their own pacer slots, alongside the other deliveries.
 * @module
 */
import { type Call, parts } from './batch.js';

/** How many times a refused call is cut: into parts, then a refused part into single entries. */
export const MAX_SPLIT_DEPTH = 2;

/** How many entries each part of a refused call of `count` entries holds: about √n for the call as planned (`depth` 0, more than 4 entries), else 1. */
export function partSize(count: number, depth: number): number {
  return depth === 0 && count > 4 ? Math.ceil(Math.sqrt(count)) : 1;
}

/** The parts a call refused as a whole is cut into (see {@link partSize}). */
export function splitRefused(call: Call, depth: number): Call[] {
  return parts(call, partSize(call.entries.length, depth));
}
