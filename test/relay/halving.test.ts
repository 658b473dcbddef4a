// A call the platform refuses as a whole without saying which entry is bad, on each outbox
// (memory, an SQLite file, Redis), against a fresh emulator each (so each has its own breaker of
// refusals): one bad entry among 100 is found with at most 3 refused calls, well under the
// breaker's 8, so it never pauses the other deliveries, which all arrive in the meantime.
import { expect, it } from 'vitest';
import { createRelayHandlers } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import type { DeliveryEvent } from '../../src/relay/core/observe.js';
import { BREAKER_LIMITS } from '../../src/relay/deliver/breaker.js';
import type { OutboxItem } from '../../src/relay/state/outbox.js';
import { backing, closing, DAY, KEY, ORIGIN, onEachBackend, ownPlatform, useDeliveryKit } from './support/delivery-kit.js';

useDeliveryKit();

/** This emulator counts no rate: calls need not leave 100 ms apart (the breaker counts refusals, not time). */
const RATE = 50;

onEachBackend(() => {
  it('one refused call of 100 is cut into parts without tripping the breaker or pausing other deliveries', async () => {
    const platform = await ownPlatform();
    closing.push(() => platform.close());
    const run = crypto.randomUUID().slice(0, 8);
    const now = Date.now();
    const entry = (n: number): OutboxItem => ({
      site: 'pk_d',
      id: `${run}-${n}`,
      kind: 'activity',
      // Entry 37 is one the platform refuses the whole call for, naming no entry it can be matched to.
      entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': `cut-${run}-${n}@example.com` }, ...(n === 37 ? { created: 'yesterday' } : {}) },
      browser: `b-${n}`,
      visitor: 'v',
      accepted: now,
    });
    // The refused call's 100, then 300 more from other browsers.
    const { outbox } = backing!;
    expect(
      (
        await outbox.accept(
          Array.from({ length: 400 }, (_, n) => entry(n)),
          now,
          DAY,
        )
      ).accepted,
    ).toHaveLength(400);
    const config = parseConfig({
      CDP_API_KEY: KEY,
      CDP_BASE_URL: platform.url,
      RELAY_SITES: JSON.stringify([{ key: 'pk_d', origins: [ORIGIN] }]),
      RELAY_LOG: 'off',
      RELAY_PLATFORM_RATE: String(RATE),
    });
    const events: DeliveryEvent[] = [];
    const handlers = createRelayHandlers(config, { ...backing, observer: { delivery: (event) => events.push(event) } });
    closing.push(() => handlers.close());
    // Paused by the breaker, this would take its 15 s window at least.
    await handlers.drained({ timeoutMs: 10_000 });

    const applied = platform.emulator.calls()['activities/create']!;
    expect(applied.entries).toBe(399);
    const refused = events.filter((event) => event.status === 400).length;
    expect(refused).toBeLessThanOrEqual(3);
    expect(refused).toBeLessThan(BREAKER_LIMITS.browser);
    // Nothing was held back by the breaker (a paused call has no status and releases its entries).
    expect(events.filter((event) => event.called && event.status === 0)).toEqual([]);
    expect((await outbox.deadLetters()).map((letter) => [letter.id, letter.reason])).toEqual([[`${run}-37`, expect.stringContaining('created must be')]]);
  }, 30_000);
}, RATE);
