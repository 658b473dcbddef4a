// Anonymous items the platform refuses, on each outbox (memory, an SQLite file, Redis), against a
// fresh emulator each (its own breaker of refusals): unverified identifies (person/merge strategy 3,
// the platform answering 400 for every one, without saying which entry) close the breaker for
// anonymous traffic, while the signed-in visitors' tracks (proven: only verified tracks are
// forwarded under the default `verify: optional`) keep going and all arrive within seconds, and so
// do a server's tracks through its door (every entry of it proves its person, whatever its site's rules).
// Before, a held anonymous call sent the rest of its lease back for the breaker's hold, and the
// breaker held every browser call alike: the tracks waited until the refused entries were found,
// a refused call at a time (minutes). Then the breaker's pause still held the tracks a full lease
// held back to fill a call (50 of 1,750 waited its 15 s): only the paused calls' entries wait now.
import { it } from 'vitest';
import { createRelayHandlers } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import { BREAKER_LIMITS, isRefusal, sharedBreaker } from '../../src/relay/deliver/breaker.js';
import type { DeliveryEvent } from '../../src/relay/core/observe.js';
import type { OutboxItem } from '../../src/relay/state/outbox.js';
import { DAY, KEY, ORIGIN, onEachBackendAtOnce, ownPlatform, useDeliveryKit } from './support/delivery-kit.js';

useDeliveryKit();

/**
 * When the breaker first let anonymous calls go again after it closed for them (`BREAKER_LIMITS.browser`
 * refusals within its window): the refusals it counted, in order, are `refusals`.
 */
function reopened(refusals: readonly number[]): number {
  const { browser, windowMs } = BREAKER_LIMITS;
  // Closed from the refusal that made `browser` of them in a window; open again once fewer are in it.
  const counted = (at: number) => refusals.filter((refusal) => refusal <= at && refusal > at - windowMs).length;
  const closed = refusals.findIndex((at) => counted(at) >= browser);
  if (closed < 0) return Number.POSITIVE_INFINITY;
  const ageOuts = refusals.map((at) => at + windowMs).filter((at) => at > refusals[closed]!);
  return ageOuts.find((at) => counted(at) < browser) ?? Number.POSITIVE_INFINITY;
}

/** This emulator counts no rate: calls need not leave 100 ms apart (the breaker counts refusals, not time). */
const RATE = 50;

/** Whose tracks go on: the signed-in visitors' (verified tracks of the browsers' site) or a server's through its door (site `server:<token name>`). */
const PROVEN = [
  { who: "the signed-in visitors' tracks", site: 'pk_d' },
  { who: 'the tracks a server sent through its door', site: 'server:shop' },
];

// Each case mostly waits (for the breaker, the tracks, a quiet second): the stores run at the same
// time, each its two cases one after the other (the tracks have a bound of their own to arrive in).
onEachBackendAtOnce((open) => {
  it.sequential.for(PROVEN)(
    'anonymous items the platform refuses pause anonymous calls only: $who all arrive',
    { timeout: 60_000 },
    async ({ site }, context) => {
      const { expect } = context;
      const backing = await open(context);
      const platform = await ownPlatform({ faults: { 'person/merge': { status: 400, message: 'Unknown field' } } });
      context.onTestFinished(() => platform.close());
      const run = crypto.randomUUID().slice(0, 8);
      const now = Date.now();
      const base = (n: number) => ({ site: 'pk_d', id: `${run}-${n}`, browser: `b-${n}`, visitor: `v-${n}`, accepted: now + n });
      // 350 unverified identifies, each from its own browser, then 1,750 verified tracks of others:
      // the first leases are full, so their last partial calls are held back to fill the next lease,
      // and must not wait for the breaker's hold.
      const anonymous = Array.from(
        { length: 350 },
        (_, n): OutboxItem => ({ ...base(n), kind: 'merge-create', entry: { fields: { 'str::email': `x-${run}-${n}@example.com` } } }),
      );
      const signedIn = Array.from({ length: 1750 }, (_, i): OutboxItem => {
        const n = 350 + i;
        return { ...base(n), site, kind: 'activity', entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': `ann-${run}-${n}@example.com` } } };
      });
      const { outbox } = backing;
      expect((await outbox.accept([...anonymous, ...signedIn], now, DAY)).accepted).toHaveLength(2100);
      const config = parseConfig({
        CDP_API_KEY: KEY,
        CDP_BASE_URL: platform.url,
        RELAY_SITES: JSON.stringify([{ key: 'pk_d', origins: [ORIGIN] }]),
        RELAY_IDENTITY_SECRET: 'breaker-proven-identity-secret-0123456789',
        RELAY_LOG: 'off',
        RELAY_PLATFORM_RATE: String(RATE),
      });
      // The relay's breaker of this platform (one a platform in the process): the refusals it counts, when.
      const breaker = sharedBreaker(platform.url);
      const refusals: number[] = [];
      const end = breaker.end;
      breaker.end = (from, status, at) => {
        if (isRefusal(status)) refusals.push(at);
        end(from, status, at);
      };
      // Breakers outlive the file (one a platform address in the process): this one counts as before once the case ends.
      context.onTestFinished(() => {
        breaker.end = end;
      });
      const events: DeliveryEvent[] = [];
      const handlers = createRelayHandlers(config, { ...backing, observer: { delivery: (event) => events.push(event) } });
      context.onTestFinished(() => handlers.close());

      // The breaker closed for anonymous calls (a held call has no status and sends its entries back),
      // however long the refusals take to come on a loaded machine…
      await expect.poll(() => events.some((event) => event.endpoint === 'person/merge' && event.called && event.status === 0), { timeout: 20_000 }).toBe(true);
      // …and the tracks arrive all the same…
      await expect.poll(() => platform.emulator.calls()['activities/create']?.entries ?? 0, { timeout: 20_000, interval: 100 }).toBeGreaterThanOrEqual(1750);
      // …before its hold let anonymous calls go again: waiting for it, they would arrive after. Not a
      // fixed time: at load 25 the tracks took more than 8 s (the bound before), the hold 15 s from
      // the refusals that closed it, on the same clock.
      const tracked = events.filter((event) => event.endpoint === 'activities/create' && event.delivered > 0).map((event) => event.at);
      expect(Math.max(...tracked), `refusals at ${refusals.map((at) => at - refusals[0]!).join(', ')} ms`).toBeLessThan(reopened(refusals));
      // …each once: after a quiet second, no track has arrived again.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(platform.emulator.calls()['activities/create']?.entries).toBe(1750);
      expect(platform.emulator.bans()).toBe(0);
      expect((await outbox.stats()).pending).toBeGreaterThan(0);
    },
  );
}, RATE);
