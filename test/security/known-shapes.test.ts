// While a site's refusal guard is closed, an unproven item of a shape the platform took lately
// still goes (accepted, then delivered); only shapes it has not taken are answered `retry`. The
// shapes are learned by the deliverer when the platform takes a call's entries: before, nothing
// learned them once delivery moved out of the request, so a closed guard held back every unproven
// item, even those of the shape the platform took a moment before.
// The guard is closed the way the deliverer closes it (chargeDelivered on the relay's limiter):
// drawing ten calls refused as a whole through the breaker takes minutes (refusal-guard.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeDelivered, createMemoryLimiter, siteGuardWait, visitorKey } from '../../src/relay/core/limits.js';
import { GUARD_RETRY } from '../../src/relay/ingest/guard.js';
import { collect, goodTrack, itemId, KEY, SITE, type Stack, startStack } from './support.js';

const limiter = createMemoryLimiter();
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ relay: { limiter } });
});
afterAll(() => stack?.close());

interface Result {
  id: string;
  status: string;
  error?: string;
}
async function send(ip: string, batch: { id: string }[]): Promise<Result[]> {
  const response = await collect(stack.relay.url, ip, batch);
  const body = (await response.json()) as { results?: Result[]; error?: { details?: Result[] } };
  return body.results ?? body.error?.details ?? [];
}

async function landed(email: string): Promise<{ fields: Record<string, unknown>; events: unknown[] } | undefined> {
  const state = (await (await fetch(`${stack.emulator.url}/_emulator/state`, { headers: { 'x-api-key': KEY } })).json()) as {
    people: { fields: Record<string, unknown>; events: unknown[] }[];
  };
  return state.people.find((person) => person.fields['str::email'] === email);
}

const identify = (email: string) => ({ id: itemId(), type: 'identify', fields: { 'str::email': email, 'str::first': 'Ann' } });

describe("a site's closed refusal guard and the shapes the platform took", () => {
  it('lets unproven items of a shape taken lately go, and holds back only new shapes', async () => {
    // The platform takes a track and an identify of each shape while the guard is open.
    const taken = await send('198.51.100.1', [goodTrack('first@example.com'), identify('named@example.com')]);
    expect(taken.map((result) => result.status)).toEqual(['accepted', 'accepted']);
    await stack.relay.drained({ timeoutMs: 10_000 });
    expect((await landed('first@example.com'))?.events).toHaveLength(1);

    // Refusals drawn by many visitors close the site's guard (none of them is the visitor below).
    const now = Date.now();
    for (let i = 0; i < 30; i++) await chargeDelivered(limiter, [{ site: SITE, visitor: visitorKey(SITE, `203.0.113.${i}`) }], true, now);
    expect(await siteGuardWait(limiter, SITE, now)).toBeGreaterThan(0);

    // Same shapes, other values, another unproven visitor: they go. New shapes (the platform would
    // take them too): held back, kept by the browser.
    const known = [goodTrack('second@example.com'), identify('other@example.com')];
    const fresh = [
      { id: itemId(), type: 'track', activity_id: 'act:cm:signed-up', person: { 'str::email': 'third@example.com' } },
      { id: itemId(), type: 'identify', fields: { 'str::email': 'fourth@example.com', 'str::last': 'Smith' } },
    ];
    const results = await send('198.51.100.2', [...known, ...fresh]);
    expect(results.map((result) => result.status)).toEqual(['accepted', 'accepted', 'retry', 'retry']);
    expect(results.slice(2).map((result) => result.error)).toEqual([GUARD_RETRY, GUARD_RETRY]);

    await stack.relay.drained({ timeoutMs: 10_000 });
    expect((await landed('second@example.com'))?.events).toHaveLength(1);
    expect((await landed('other@example.com'))?.fields['str::first']).toBe('Ann');
    expect(await landed('third@example.com')).toBeUndefined();
    expect(await landed('fourth@example.com')).toBeUndefined();
  }, 60_000);
});
