// Partial calls held back in a backlog to fill (deliver/holds.ts): a call may wait for the next
// lease, but none of its entries waits more than HOLD_MS in all, so a lone identify in a long
// backlog still goes; what is held long ago and never seen again is forgotten.
import { describe, expect, it } from 'vitest';
import { createHolds, HOLD_MS } from '../../src/relay/deliver/holds.js';
import type { Leased } from '../../src/relay/state/outbox.js';

const entries = (...seqs: number[]) => seqs.map((seq) => ({ seq }) as Leased);

describe('partial calls held back to fill', () => {
  it('holds a call until one of its entries has waited HOLD_MS, then lets it go', () => {
    const holds = createHolds();
    expect(holds.mayHold(entries(1, 2), 0)).toBe(true);
    expect(holds.mayHold(entries(1, 2, 3), HOLD_MS - 1)).toBe(true);
    // Entry 1 has waited its time: the call goes, with entry 3 that had waited less.
    expect(holds.mayHold(entries(1, 2, 3), HOLD_MS)).toBe(false);
    // Going, they are forgotten: held again later, they wait afresh.
    expect(holds.mayHold(entries(3), HOLD_MS + 1)).toBe(true);
    expect(holds.mayHold(entries(3), 2 * HOLD_MS)).toBe(true);
    expect(holds.mayHold(entries(3), 2 * HOLD_MS + 1)).toBe(false);
  });

  it('forgets entries held long ago and never seen again (sent by another deliverer)', () => {
    const holds = createHolds();
    expect(holds.mayHold(entries(7), 0)).toBe(true);
    // Seen again long after: it counts as new, not as having waited all that time.
    expect(holds.mayHold(entries(7), 20 * HOLD_MS)).toBe(true);
  });
});
