// A merge the platform fails every time (500 to every call naming one email), on each outbox
// (memory, an SQLite file, Redis), against a fresh emulator each: the merge is sent a bounded number
// of times, cut apart from the entries leased with it, then dead-lettered with its reason; every
// other identify and track is delivered, once, while it is still in doubt.
import { it } from 'vitest';
import { createRelayHandlers } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import type { DeliveryEvent } from '../../src/relay/core/observe.js';
import { MAX_TRIES } from '../../src/relay/deliver/doubt.js';
import type { OutboxItem } from '../../src/relay/state/outbox.js';
import { DAY, KEY, ORIGIN, onEachBackendAtOnce, ownPlatform, useDeliveryKit } from './support/delivery-kit.js';

useDeliveryKit();

/** This emulator counts no rate: calls need not leave 100 ms apart. */
const RATE = 50;

// Each case mostly waits out the retries' waits (4 s on the real clock): the stores' cases run at once.
onEachBackendAtOnce((open) => {
  it('a merge answered 500 every time is dead-lettered after a bounded number of sends; the others go on', async (context) => {
    const { expect } = context;
    const backing = await open(context);
    const run = crypto.randomUUID().slice(0, 8);
    const poison = `poison-${run}@example.com`;
    const platform = await ownPlatform({ faults: { 'person/merge': { status: 500, naming: poison } } });
    context.onTestFinished(() => platform.close());
    const now = Date.now();
    const email = (n: number) => (n === 42 ? poison : `ok-${run}-${n}@example.com`);
    // 150 browsers identify (one a call's worth and more), then 150 other browsers track.
    const identifies: OutboxItem[] = Array.from({ length: 150 }, (_, n) => ({
      site: 'pk_d',
      id: `${run}-i${n}`,
      kind: 'merge',
      entry: { fields: { 'str::email': email(n), 'str::first': `n${n}` } },
      browser: `b-${n}`,
      visitor: `v-${n}`,
      accepted: now,
    }));
    const tracks: OutboxItem[] = Array.from({ length: 150 }, (_, n) => ({
      site: 'pk_d',
      id: `${run}-t${n}`,
      kind: 'activity',
      entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': `track-${run}-${n}@example.com` } },
      browser: `t-${n}`,
      visitor: `w-${n}`,
      accepted: now,
    }));
    const { outbox } = backing;
    expect((await outbox.accept([...identifies, ...tracks], now, DAY)).accepted).toHaveLength(300);
    const config = parseConfig({
      CDP_API_KEY: KEY,
      CDP_BASE_URL: platform.url,
      RELAY_SITES: JSON.stringify([{ key: 'pk_d', origins: [ORIGIN], verify: 'open' }]),
      RELAY_LOG: 'off',
      RELAY_PLATFORM_RATE: String(RATE),
      // The wait before a merge in doubt goes again starts at this (then triples): 0.1 + 0.3 + 0.9 + 2.7 s.
      RELAY_DELIVERY_RETRY_MS: '100',
    });
    const events: DeliveryEvent[] = [];
    const handlers = createRelayHandlers(config, { ...backing, observer: { delivery: (event) => events.push(event) } });
    context.onTestFinished(() => handlers.close());
    // Sent again whole forever, it would never drain.
    await handlers.drained({ timeoutMs: 30_000 });

    // Only the poisoned merge is a dead letter, with the platform's answer as its reason.
    const dead = await outbox.deadLetters();
    expect(dead.map((letter) => [letter.id, letter.reason, letter.status])).toEqual([[`${run}-i42`, expect.stringMatching(/^unanswered: .*500/), 500]]);
    // Every other person and event arrived, once.
    const people = [...platform.emulator.state.people.values()];
    const named = (address: string) => people.filter((p) => p.fields['str::email'] === address);
    for (let n = 0; n < 150; n++) if (n !== 42) expect(named(email(n)), email(n)).toHaveLength(1);
    expect(named(poison)).toHaveLength(0);
    expect(platform.emulator.calls()['activities/create']!.entries).toBe(150);
    // The poisoned merge went at most MAX_TRIES times; every call that failed carried it.
    const failed = events.filter((event) => event.endpoint === 'person/merge' && event.status === 500);
    expect(failed.length).toBeLessThanOrEqual(MAX_TRIES);
    // Whatever was leased with it was delivered while it was still in doubt: before its dead letter.
    const deadAt = events.findIndex((event) => event.dead.length > 0);
    const deliveredBefore = events.slice(0, deadAt).reduce((sum, event) => sum + event.delivered, 0);
    expect(deliveredBefore).toBe(299);
    // Counted: the dead letter's reason class is `unanswered`.
    expect(events[deadAt]!.dead.map((letter) => letter.reason.split(':')[0])).toEqual(['unanswered']);
  }, 45_000);
}, RATE);
