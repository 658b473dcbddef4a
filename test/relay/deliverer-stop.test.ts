// A graceful stop ends the deliverer promptly whatever it was doing. Its naps use timers that do
// not keep the process alive (the server does that), so a nap begun after the stop's wake, or one
// the wake did not reach, would leave `stop()` waiting on a timer that never fires once the server
// has closed: `cdp-edge relay` then exited 13 ("unsettled top-level await") on SIGTERM instead of 0.
import { expect, it, vi } from 'vitest';
import { createRelayHandlers } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import { startEmulator } from '../../src/emulator/index.js';
import { systemClock } from '../../src/relay/core/clock.js';
import { createDeliverer } from '../../src/relay/deliver/deliverer.js';
import { createFiller } from '../../src/relay/deliver/fill.js';
import { createMemoryOutbox, createMemoryPacer } from '../../src/relay/state/memory-outbox.js';
import type { Upstream } from '../../src/relay/deliver/caller.js';

const KEY = 'stop-test-key';

const neverCalled: Upstream = new Proxy({} as Upstream, {
  get: () => () => {
    throw new Error('no call is made: the outbox is empty');
  },
});

it('stops at once when the stop comes while the deliverer asks for the lead', async () => {
  const outbox = createMemoryOutbox();
  let asked!: () => void;
  const asking = new Promise<void>((resolve) => (asked = resolve));
  let answer!: (leads: boolean) => void;
  // The lock is another's, and the answer comes only after the stop has begun.
  outbox.lead = () => {
    asked();
    return new Promise<boolean>((resolve) => (answer = resolve));
  };
  const deliverer = createDeliverer({
    outbox,
    pacer: createMemoryPacer(10),
    upstream: neverCalled,
    clock: systemClock,
    sites: new Map(),
    ambiguous: 'hold',
    waitMs: 0,
    // A standby naps a third of this between asks: far longer than the test's budget.
    leadTtlMs: 60_000,
  });
  deliverer.start();
  await asking;
  const started = Date.now();
  const stopped = deliverer.stop();
  answer(false);
  await stopped;
  expect(Date.now() - started).toBeLessThan(2_000);
});

it('a wake ends every nap in progress, and a nap after the stop does not wait', async () => {
  let stopping = false;
  const filler = createFiller(0, () => stopping);
  const ended: string[] = [];
  const first = filler.nap(60_000).then(() => ended.push('first'));
  const second = filler.nap(60_000).then(() => ended.push('second'));
  filler.wake();
  await Promise.all([first, second]);
  expect(ended.sort()).toEqual(['first', 'second']);
  stopping = true;
  const started = Date.now();
  await filler.nap(60_000);
  expect(Date.now() - started).toBeLessThan(1_000);
});

it('a stop while calls wait to leave: they go back unmarked at once, and the event loop stays responsive', async () => {
  // A relay whose spacer lets a call leave every 1.25 s (RELAY_PLATFORM_RATE 0.4) while its pacer
  // grants at once: the calls of a lease after the first have their slots and wait to leave.
  const platform = await startEmulator({ port: 0, key: KEY, plan: 'business' });
  try {
    const config = parseConfig({
      CDP_API_KEY: KEY,
      CDP_BASE_URL: platform.url,
      RELAY_SITES: JSON.stringify([{ key: 'pk_s', origins: ['https://shop.example.com'], verify: 'open' }]),
      RELAY_LOG: 'off',
      RELAY_PLATFORM_RATE: '0.4',
    });
    const outbox = createMemoryOutbox();
    const now = Date.now();
    const items = Array.from({ length: 1000 }, (_, n) => ({
      site: 'pk_s',
      id: `stop-${n}-${crypto.randomUUID()}`,
      kind: 'activity' as const,
      entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': `stop-${n}@example.com` } },
      browser: `b-${n}`,
      visitor: 'v',
      accepted: now,
    }));
    expect((await outbox.accept(items, now, 24 * 3600_000)).accepted).toHaveLength(1000);
    const handlers = createRelayHandlers(config, { outbox, pacer: createMemoryPacer(1000) });
    // The first call has gone: the next ones wait for the spacer.
    await vi.waitUntil(() => (platform.emulator.calls()['activities/create']?.calls ?? 0) >= 1, { timeout: 10_000, interval: 20 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The event loop's delay: the longest gap between the ticks of a 10 ms timer during the stop.
    let last = performance.now();
    let longest = 0;
    const tick = () => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    };
    const ticker = setInterval(tick, 10);
    const stopping = Date.now();
    await handlers.close();
    tick();
    clearInterval(ticker);
    // The calls waiting to leave did not go: the stop did not wait out their spacer…
    expect(platform.emulator.calls()['activities/create']!.calls).toBe(1);
    expect(Date.now() - stopping).toBeLessThan(1_000);
    // …and their entries are back in the outbox as never sent (no send counted), none in doubt.
    const back = await outbox.lease('check', 1000, Date.now(), 60_000);
    expect(back).toHaveLength(900);
    expect(back.filter((entry) => entry.attempts !== 0)).toEqual([]);
    expect((await outbox.deadLetters()).filter((letter) => letter.reason === 'ambiguous')).toEqual([]);
    // Timers ran meanwhile: a loop spinning on naps that end at once held the event loop for as
    // long as the stop (7 s measured before a stop slept).
    expect(longest).toBeLessThan(500);
  } finally {
    await platform.close();
  }
}, 30_000);
