// A graceful stop ends the deliverer promptly whatever it was doing. Its naps use timers that do
// not keep the process alive (the server does that), so a nap begun after the stop's wake, or one
// the wake did not reach, would leave `stop()` waiting on a timer that never fires once the server
// has closed: `cdp-edge relay` then exited 13 ("unsettled top-level await") on SIGTERM instead of 0.
import { expect, it } from 'vitest';
import { systemClock } from '../../src/relay/core/clock.js';
import { createDeliverer } from '../../src/relay/deliver/deliverer.js';
import { createFiller } from '../../src/relay/deliver/fill.js';
import { createMemoryOutbox, createMemoryPacer } from '../../src/relay/state/memory-outbox.js';
import type { Upstream } from '../../src/relay/deliver/caller.js';

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
