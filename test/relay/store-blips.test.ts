// A store that fails once while a lease's outcome is written (a Redis blip, SQLITE_BUSY after a 200
// answer), on each outbox (memory, an SQLite file, a real redis-server): the write is tried again
// within the lease, so the verdict the relay knew is kept. Nothing becomes an ambiguous dead
// letter, and every event arrives once.
import { expect, it } from 'vitest';
import type { Outbox } from '../../src/relay/state/outbox.js';
import { backing, eventsOf, onEachBackend, relay, track, useDeliveryKit } from './support/delivery-kit.js';

useDeliveryKit();

/** `outbox`, whose first `sending` and first `settle` of delivered entries fail before they write, as a store blip does. */
function blipping(outbox: Outbox): { outbox: Outbox; failed: string[] } {
  const failed: string[] = [];
  const blip = (write: string) => {
    failed.push(write);
    throw Object.assign(new Error(write === 'settle' ? 'database is locked' : 'connection reset by the store'), { code: 'SQLITE_BUSY' });
  };
  const wrapped = new Proxy(outbox, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property === 'sending')
        return async (...args: Parameters<Outbox['sending']>) => (failed.includes('sending') ? target.sending(...args) : blip('sending'));
      if (property === 'settle')
        return async (...args: Parameters<Outbox['settle']>) =>
          args[1].delivered.length === 0 || failed.includes('settle') ? target.settle(...args) : blip('settle');
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { outbox: wrapped, failed };
}

onEachBackend(() => {
  it('a failed sending or settle write is tried again: no entry becomes ambiguous, each arrives once', async () => {
    const store = blipping(backing!.outbox);
    // A short lease: without the retry, the failed settle's entries come back within the test as ambiguous.
    const { post, handlers } = relay({ RELAY_DELIVERY_LEASE_MS: '3500', RELAY_AMBIGUOUS: 'hold' }, { outbox: store.outbox });
    const emails = Array.from({ length: 30 }, (_, n) => `blip-${n}-${crypto.randomUUID()}@example.com`);
    const results = (await post(emails.map((email) => track(email)))).results;
    expect(results.every((result) => result.status === 'accepted')).toBe(true);
    // Drained: nothing ready and nothing leased (pending counts both). Entries a failed write left
    // leased would still be pending here until their lease ran out, then come back and be judged
    // (ambiguous, a dead letter) before the outbox drains.
    await handlers.drained({ timeoutMs: 15_000 });
    expect(store.failed).toEqual(['sending', 'settle']);
    expect(await backing!.outbox.deadLetters()).toEqual([]);
    expect(emails.map((email) => eventsOf(email).length)).toEqual(emails.map(() => 1));
  }, 40_000);
});
