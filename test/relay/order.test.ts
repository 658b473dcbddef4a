// Order across leases, on each outbox (memory, an SQLite file, Redis), against the real emulator:
// a browser's identify whose merge the platform did not apply (a 503) goes back to the outbox for
// later, and a track the same browser sends afterwards, in a later request, still waits for it.
import { expect, it } from 'vitest';
import type { DeliveryEvent } from '../../src/relay/core/observe.js';
import { emulator, eventsOf, identify, onEachBackend, person, relay, track, useDeliveryKit } from './support/delivery-kit.js';

useDeliveryKit();

const calls = (events: DeliveryEvent[], endpoint: DeliveryEvent['endpoint']) => events.filter((event) => event.called && event.endpoint === endpoint);

onEachBackend(() => {
  it('a merge released for later (a 503) still goes before the tracks its browser sends afterwards', async () => {
    // The merge goes again 500 ms after a 503 (5 s by default).
    const { post, handlers, events } = relay({ RELAY_DELIVERY_WAIT_MS: '0', RELAY_DELIVERY_RETRY_MS: '500' });
    const email = `released-${crypto.randomUUID()}@example.com`;
    emulator.emulator.setFaults({ 'person/merge': { status: 503 } });
    await post([identify(email, 'Rae')], { queue: 'browser-rae' });
    await expect.poll(() => calls(events, 'person/merge').length).toBeGreaterThan(0);
    // The merge went back to the outbox; the browser's next request brings a track.
    await post([track(email)], { queue: 'browser-rae' });
    // The relay tries the merge again (after its wait): the track has not gone before it.
    await expect.poll(() => calls(events, 'person/merge').length, { timeout: 15_000 }).toBeGreaterThan(1);
    expect(calls(events, 'activities/create')).toEqual([]);
    emulator.emulator.setFaults({});
    await handlers.drained({ timeoutMs: 20_000 });
    // The merge was applied first, then the track.
    const merged = events.findIndex((event) => event.endpoint === 'person/merge' && event.delivered === 1);
    const tracked = events.findIndex((event) => event.endpoint === 'activities/create' && event.delivered === 1);
    expect(merged).toBeGreaterThanOrEqual(0);
    expect(tracked).toBeGreaterThan(merged);
    expect(person(email)[0]!.fields['str::first']).toBe('Rae');
    expect(eventsOf(email)).toHaveLength(1);
  }, 40_000);
});
