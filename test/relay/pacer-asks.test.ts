// What a platform call costs the pacer while browsers keep sending: each ask is a write to the
// store (an fsynced transaction on SQLite, a script on Redis), so a call asks about three times
// (a take told to wait, the take granted, its leave), however often new items arrive meanwhile.
// Before, every accepted request past a full call's worth woke the waits of the calls planned,
// each of which asked again: 6 to 11 asks a call at 100 requests a second. A call that goes later
// than its place in the shared window (a busy machine's event loop) is counted again by design, two
// times at most (deliver/slots.ts): those asks are the machine's, counted apart (`lateAsks`).
import { expect, it } from 'vitest';
import type { Pacer } from '../../src/relay/state/outbox.js';
import { backing, DAY, eventsOf, onEachBackend, relay, track, useDeliveryKit } from './support/delivery-kit.js';

useDeliveryKit();

/** The backend's pacer, its asks counted (take and leave are what a deliver call writes). */
function counted(pacer: Pacer) {
  const asks = { take: 0, leave: 0 };
  const leave = pacer.leave;
  const wrapped: Pacer = {
    take: (...args) => {
      asks.take++;
      return pacer.take(...args);
    },
    hold: (until, now) => pacer.hold(until, now),
    ...(leave
      ? {
          leave: (...args: Parameters<typeof leave>) => {
            asks.leave++;
            return leave(...args);
          },
        }
      : {}),
  };
  return { asks, pacer: wrapped };
}

onEachBackend(() => {
  it('asks the pacer a bounded number of times a call while items arrive every 10 ms', async () => {
    const { asks, pacer } = counted(backing!.pacer);
    const run = crypto.randomUUID().slice(0, 8);
    // A backlog first (accepted straight into the outbox: no kick), so each lease plans calls that wait for their slots.
    const now = Date.now();
    const backlog = Array.from({ length: 2_000 }, (_, n) => ({
      site: 'pk_d',
      id: `asks-${run}-${n}`,
      kind: 'activity' as const,
      entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': `asks-${run}-backlog-${n}@example.com` } },
      browser: `b-${n}`,
      visitor: `v-${n}`,
      accepted: now,
    }));
    expect((await backing!.outbox.accept(backlog, now, DAY)).accepted).toHaveLength(2_000);
    const { handlers, post, events } = relay({ RELAY_PLATFORM_RATE: '10' }, { pacer });
    const emails = backlog.map((item) => item.entry.fields['str::email']);
    // Then a request every 10 ms, 10 items each, while those calls wait: for 2 s, and on until 10
    // calls went out (a busy machine's slow commits can hold the first calls back; the bound is per
    // call, so it wants calls enough to read it on), 15 s at most.
    const started = Date.now();
    const called = () => events.filter((event) => event.called).length;
    for (let n = 0; (Date.now() < started + 2_000 || called() < 10) && Date.now() < started + 15_000; n++) {
      const batch = Array.from({ length: 10 }, (_, i) => {
        const email = `asks-${run}-${n}-${i}@example.com`;
        emails.push(email);
        return track(email);
      });
      await post(batch, { queue: `browser-${n}` });
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const calls = called();
    const late = events.reduce((sum, event) => sum + (event.lateAsks ?? 0), 0);
    const perCall = (asks.take + asks.leave - late) / calls;
    // Read before draining: a drained() caller wakes every wait to look again.
    expect(calls).toBeGreaterThanOrEqual(10);
    const said = `${asks.take} takes and ${asks.leave} leaves (${late} of them for lateness) for ${calls} calls`;
    expect(perCall, said).toBeLessThanOrEqual(4);
    expect(
      events.every((event) => (event.lateAsks ?? 0) <= 2),
      said,
    ).toBe(true);
    await handlers.drained({ timeoutMs: 20_000 });
    // Every item once.
    expect(emails.filter((email) => eventsOf(email).length !== 1)).toEqual([]);
  }, 30_000);
});
