// The deliverer's lead lock is a write of the store (a transaction and a WAL sync on the SQLite
// file). While calls go, each call's cover holds the lock past the call's timeout, longer than a
// renewal would; a renewal then wrote the lock back to what it held, and the next call's cover
// wrote it again for its own term: two writes where one does. The lock stays the leader's as long
// either way, and it still renews it once the calls stop.
import { expect, it } from 'vitest';
import type { Clock } from '../../src/relay/core/clock.js';
import { createLead } from '../../src/relay/deliver/lead.js';
import { createMemoryOutbox } from '../../src/relay/state/memory-outbox.js';

it('renews the lock with one write a renewal while calls cover it, and keeps it once they stop', async () => {
  const outbox = createMemoryOutbox();
  let at = Date.now();
  const clock: Clock = { now: () => at, sleep: async () => {} };
  const writes: number[] = [];
  const lead = outbox.lead.bind(outbox);
  outbox.lead = (owner, now, ttlMs) => {
    writes.push(now + ttlMs);
    return lead(owner, now, ttlMs);
  };
  const leader = createLead({ outbox, owner: 'leader', clock, ttlMs: 3_000, log: () => {} });
  const standby = createLead({ outbox: { ...outbox, lead }, owner: 'standby', clock, ttlMs: 3_000, log: () => {} });
  expect(await leader.keep()).toBe(true);
  // Calls every 100 ms for 10 s, as the scheduler asks: a keep a lease, a cover a call (its timeout and margins).
  for (let n = 0; n < 100; n++, at += 100) {
    expect(await leader.keep()).toBe(true);
    expect(await leader.cover(at + 13_000)).toBe(true);
  }
  // One write a renewal (every 1 s, a third of the lock's life): 10 in 10 s and the first keep, not 20.
  expect(writes.length).toBeLessThanOrEqual(12);
  // No standby takes it while the last call's cover runs; once the calls stop, the leader's keeps hold it on.
  for (let t = 0; t < 30_000; t += 500, at += 500) {
    expect(await standby.keep()).toBe(false);
    expect(await leader.keep()).toBe(true);
  }
}, 10_000);
