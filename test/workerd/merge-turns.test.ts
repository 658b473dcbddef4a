// One person's merges never overlap on Workers, whichever outbox objects deliver them: a user
// signed in on a phone and a laptop (two browsers, whose items live in two objects) identifies
// again and again while the platform takes a few hundred ms per call. Every `person/merge` call
// naming the person is read from the platform's own record, from its arrival to its answer: no
// two overlap (each object's merge call takes the person's turn from the key's pacer object with
// its slot, and gives it back once answered), and every identify is applied exactly once.
import { env } from 'cloudflare:test';
import { beforeEach, expect, it } from 'vitest';
import { createShardedOutbox } from '../../src/relay/workers/outbox.js';
import { DEFAULT_SHARDS, hash } from '../../src/relay/workers/state.js';
import { upstreamControl } from '../relay/support/control.js';
import { identify, siteKey } from '../relay/suite/target.js';
import { drained, pacerRequests, postItem } from './target.js';

const upstream = upstreamControl(env['TEST_UPSTREAM'] as string);
const outbox = createShardedOutbox(env['RELAY_OUTBOX'], DEFAULT_SHARDS);
/** How long the platform takes per call (ms). */
const PLATFORM_MS = 300;
/** Identifies each browser sends, one a round. */
const ROUNDS = 8;

/** A browser id whose items live in another outbox object than `other`'s. */
function browserApartFrom(other?: string): string {
  for (;;) {
    const queue = crypto.randomUUID();
    if (other === undefined || hash(queue) % DEFAULT_SHARDS !== hash(other) % DEFAULT_SHARDS) return queue;
  }
}

beforeEach(async () => {
  await drained(outbox);
  await upstream.reset();
});

// The platform finds a person by an email in any case: a phone may send `Turns-…@Example.com`
// where the laptop sends `turns-…@example.com`, and the two still take the one person's turn.
const spellings = [
  { name: 'one email, spelled alike', phone: (email: string) => email },
  { name: 'one email in two cases', phone: (email: string) => email.replace('turns-', 'Turns-').replace('example.com', 'Example.COM') },
];

it.each(spellings)(
  'never has two person/merge calls naming one person in flight at once, from two browsers in two objects; each identify applied once ($name)',
  async ({ phone: phoneSpelling }) => {
    const key = siteKey('turns');
    const email = `turns-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const emailOf = (queue: string) => (queue === phone ? phoneSpelling(email) : email);
    const phone = browserApartFrom();
    const laptop = browserApartFrom(phone);
    const sent: string[] = [];
    const pacerBefore = await pacerRequests();
    await upstream.always({ delayMs: PLATFORM_MS });
    try {
      // Both browsers identify the person at the same moments, a round every PLATFORM_MS: each object's alarm has a merge ready at once.
      for (let round = 0; round < ROUNDS; round++) {
        const answers = await Promise.all(
          [
            [phone, '198.51.100.1'],
            [laptop, '198.51.100.2'],
          ].map(async ([queue, ip]) => {
            const mark = `${queue!.slice(0, 8)}-${round}`;
            sent.push(mark);
            const response = await postItem(key, queue!, ip!, identify({ 'str::email': emailOf(queue!), 'str::last': mark }));
            return ((await response.json()) as { results: { status: string }[] }).results[0]?.status;
          }),
        );
        expect(answers).toEqual(['accepted', 'accepted']);
        await new Promise((resolve) => setTimeout(resolve, PLATFORM_MS));
      }
      await drained(outbox, 30_000);
    } finally {
      await upstream.always(undefined);
    }
    const merges = (await upstream.received()).filter(
      (call) =>
        call.path === '/v1/person/merge' &&
        (call.body.people ?? []).some((person: { fields: Record<string, unknown> }) => String(person.fields['str::email']).toLowerCase() === email),
    );
    const applied = merges
      .filter((call) => call.status >= 200 && call.status < 300)
      .flatMap((call) => call.body.people.map((person: { fields: Record<string, unknown> }) => person.fields['str::last'] as string));
    expect(applied.sort()).toEqual([...sent].sort());
    // Enough calls that they would overlap if they could: both objects had merges of the person ready at once, round after round.
    expect(merges.length).toBeGreaterThanOrEqual(4);
    for (const [i, a] of merges.entries()) {
      expect(a.answered).toBeDefined();
      for (const b of merges.slice(i + 1)) expect(a.answered! <= b.at || b.answered! <= a.at, JSON.stringify([a.at, a.answered, b.at, b.answered])).toBe(true);
    }
    const pacer = (await pacerRequests()) - pacerBefore;
    console.log(
      `merge turns: ${merges.length} person/merge calls for ${sent.length} identifies; the key's pacer object served ${pacer} requests (${(pacer / merges.length).toFixed(1)} per call)`,
    );
  },
  60_000,
);
