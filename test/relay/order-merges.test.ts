// Merges of one person, against the real emulator over HTTP taking a while per call, every
// `person/merge` call recorded from the moment it leaves to its answer: merge calls naming one
// person never overlap (two merges of one person in calls in flight together could apply out of
// order; calls of other people may), and a
// verified and an unverified identify of one person (merge strategies 2 and 3, so different
// calls) apply in the order they were accepted.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createMemoryOutbox, createMemoryPacer } from '../../src/relay/state/memory-outbox.js';
import type { Outbox } from '../../src/relay/state/outbox.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { type RecordedCall, recordingDeliverer, startViewedEmulator, storeItem } from './support/recorded-calls.js';

const KEY = 'order-merges-key';
const DAY = 24 * 3600_000;

let emulator: RunningEmulator;
beforeAll(async () => {
  emulator = await startViewedEmulator(KEY, { latencyMs: 150 });
});
afterAll(() => emulator?.close());

/** A deliverer on `outbox` whose every platform call is recorded in `calls`. */
const deliverer = (outbox: Outbox, calls: RecordedCall[]) =>
  recordingDeliverer({ by: 'relay', emulator, apiKey: KEY, site: 'pk_m', calls, outbox, pacer: createMemoryPacer(30), rate: 30 });

const identify = (kind: 'merge' | 'merge-create', email: string, fields: Record<string, unknown> = {}) =>
  storeItem('pk_m', kind, email, `browser-${email}`, fields);

const person = (email: string) => [...emulator.emulator.state.people.values()].find((p) => p.fields['str::email'] === email);

it('never has two merge calls naming one person in flight at once, over many identifies of the same and different people, across leases', async () => {
  const outbox = createMemoryOutbox();
  const calls: RecordedCall[] = [];
  const relay = deliverer(outbox, calls);
  const run = crypto.randomUUID().slice(0, 8);
  const emails = Array.from({ length: 40 }, (_, n) => `p${n}-${run}@example.com`);
  try {
    relay.start();
    // 600 identifies of 40 people, verified and unverified, in three batches accepted while the first ones go.
    for (let batch = 0; batch < 3; batch++) {
      const items = Array.from({ length: 200 }, (_, n) =>
        identify(n % 3 === 0 ? 'merge-create' : 'merge', emails[(n * 7 + batch) % 40]!, { 'str::last': `b${batch}-${n}` }),
      );
      expect((await outbox.accept(items, Date.now(), DAY)).accepted).toHaveLength(200);
      relay.kick(200);
      await expect.poll(() => calls.length, { timeout: 10_000 }).toBeGreaterThan(batch);
    }
    await relay.drained({ timeoutMs: 20_000 });
  } finally {
    await relay.stop();
  }
  const merges = calls.filter((call) => call.endpoint === 'person/merge');
  // Enough calls to overlap if they could: several per lease (two strategies, at most 100 people a call).
  expect(merges.length).toBeGreaterThanOrEqual(6);
  expect(merges.flatMap((call) => call.emails)).toHaveLength(600);
  // Each email is its own browser here: calls naming one email name one person and one browser.
  const names = (call: RecordedCall, email: string) => call.emails.some((named) => named.toLowerCase() === email.toLowerCase());
  for (const [i, a] of merges.entries())
    for (const b of merges.slice(i + 1))
      if (a.emails.some((email) => names(b, email)))
        expect(a.answered <= b.left || b.answered <= a.left, JSON.stringify([a.left, a.answered, b.left, b.answered])).toBe(true);
  // The last identify of each person is what the person holds.
  expect(person(emails[0]!)?.fields['str::last']).toMatch(/^b2-/);
}, 30_000);

// The unverified identify may come from a phone spelling the email `Pat-…@Example.COM`, the verified
// one from a laptop spelling it `pat-…@example.com`: the platform finds one person by both.
it.each([
  { spelled: 'alike', unverified: (email: string) => email },
  { spelled: 'in two cases on two browsers', unverified: (email: string) => email.replace('pat-', 'Pat-').replace('example.com', 'Example.COM') },
])(
  'applies a verified and an unverified identify of one person in the order they were accepted, though they go in different calls (email spelled $spelled)',
  async ({ unverified }) => {
    const outbox = createMemoryOutbox();
    const calls: RecordedCall[] = [];
    const relay = deliverer(outbox, calls);
    const run = crypto.randomUUID().slice(0, 8);
    const [quinn, pat] = [`quinn-${run}@example.com`, `pat-${run}@example.com`];
    try {
      // Quinn's verified identify first; then Pat's unverified one creates Pat unsubscribed, and
      // Pat's verified one, which names no subscription, adds a name: Pat stays unsubscribed.
      const items = [
        identify('merge', quinn, { 'str::first': 'Quinn' }),
        identify('merge-create', unverified(pat), { 'bol::p': false }),
        identify('merge', pat, { 'str::first': 'Pat' }),
      ];
      expect((await outbox.accept(items, Date.now(), DAY)).accepted).toHaveLength(3);
      relay.start();
      await relay.drained({ timeoutMs: 10_000 });
    } finally {
      await relay.stop();
    }
    const patCalls = calls.filter((call) => call.endpoint === 'person/merge' && call.emails.some((email) => email.toLowerCase() === pat));
    expect(patCalls).toHaveLength(2);
    const pats = [...emulator.emulator.state.people.values()].filter((p) => String(p.fields['str::email']).toLowerCase() === pat);
    expect(pats).toHaveLength(1);
    expect(pats[0]!.fields).toMatchObject({ 'str::first': 'Pat', 'bol::p': false });
    expect(person(quinn)?.fields['str::first']).toBe('Quinn');
  },
  20_000,
);

it("never lets another browser's newer merge of a person pass an older one held back to fill a call", async () => {
  const outbox = createMemoryOutbox();
  const calls: RecordedCall[] = [];
  const relay = deliverer(outbox, calls);
  const run = crypto.randomUUID().slice(0, 8);
  const ann = `ann-${run}@example.com`;
  const item = (kind: 'merge' | 'activity', email: string, browser: string, fields: Record<string, unknown> = {}) =>
    storeItem('pk_m', kind, email, browser, fields);
  // A backlog: the first lease (1,000 entries) holds the phone's identify of Ann, alone in a partial
  // merge call, back to fill. The second lease has a full merge call, the laptop's later identify of
  // Ann in it, leased while the first lease's last calls are still answered.
  const first = [
    item('merge', ann.replace('ann-', 'Ann-'), 'phone', { 'str::first': 'Old' }),
    ...Array.from({ length: 999 }, (_, n) => item('activity', `t${n}-${run}@example.com`, `t${n}`)),
  ];
  const second = [
    ...Array.from({ length: 99 }, (_, n) => item('merge', `m${n}-${run}@example.com`, `m${n}`)),
    item('merge', ann, 'laptop', { 'str::first': 'New' }),
    ...Array.from({ length: 900 }, (_, n) => item('activity', `u${n}-${run}@example.com`, `u${n}`)),
  ];
  try {
    for (const items of [first, second]) expect((await outbox.accept(items, Date.now(), DAY)).accepted).toHaveLength(items.length);
    relay.start();
    await relay.drained({ timeoutMs: 20_000 });
  } finally {
    await relay.stop();
  }
  const annCalls = calls.filter((call) => call.endpoint === 'person/merge' && call.emails.some((email) => email.toLowerCase() === ann));
  expect(annCalls.map((call) => call.status)).toEqual([200, 200]);
  // The phone's identify went first: the person holds the laptop's later name.
  expect(annCalls[0]!.emails).toContain(ann.replace('ann-', 'Ann-'));
  expect(person(ann)?.fields['str::first']).toBe('New');
}, 30_000);
