// The look every /collect takes at its site's refusal bucket (the site's guard), in the RelayState
// objects: an isolate trusts an answer for a while and, while one request's look is under way, the
// others take the answer it last had, so a burst of requests costs the site's bucket object about
// one call, not one per request. No request ever waits on another's call: in workerd a call belongs
// to the request that made it, and a request cut off by its client takes its call with it.
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createMemoryLimiter, refusalKey, SITE_REFUSALS, siteGuardWait, siteKey } from '../../src/relay/core/limits.js';
import { durableRefusals } from '../../src/relay/workers/refusals.js';
import { cutOffFirst, refusalCalls as calls } from './cut-off.js';

describe("the site's guard, looked at by every /collect", () => {
  it('costs one call for looks asked at once while one is under way, and still sees a guard another isolate closed', async () => {
    const site = `pk_look_${crypto.randomUUID().slice(0, 8)}`;
    const bucket = refusalKey(siteKey(site));
    const now = Date.now();
    const isolate = durableRefusals(env['RELAY_STATE'], createMemoryLimiter(), { cacheMs: 0 });
    const before = await calls(bucket);
    expect(await siteGuardWait(isolate, site, now)).toBe(0);
    expect(await Promise.all(Array.from({ length: 20 }, () => siteGuardWait(isolate, site, now)))).toEqual(Array(20).fill(0));
    expect(await calls(bucket)).toBe(before + 2);

    // Another isolate closes the guard (refused calls charged); the next looks here see it closed.
    const other = durableRefusals(env['RELAY_STATE'], createMemoryLimiter());
    await other.limit(bucket, SITE_REFUSALS, now, SITE_REFUSALS.burst + 1);
    expect(await siteGuardWait(isolate, site, now)).toBeGreaterThan(0);
    const waits = await Promise.all(Array.from({ length: 5 }, () => siteGuardWait(isolate, site, now)));
    expect(waits.every((wait) => wait > 0)).toBe(true);
  });

  it('costs a busy site about one call a second per isolate once the isolate has an answer', async () => {
    const site = `pk_busy_${crypto.randomUUID().slice(0, 8)}`;
    const bucket = refusalKey(siteKey(site));
    const isolate = durableRefusals(env['RELAY_STATE'], createMemoryLimiter());
    const start = Date.now();
    const wave = (at: number) => Promise.all(Array.from({ length: 10 }, () => siteGuardWait(isolate, site, at)));
    const before = await calls(bucket);
    // Before its first answer the isolate has none to give: each of these looks asks.
    expect(await wave(start)).toEqual(Array(10).fill(0));
    const first = (await calls(bucket)) - before;
    // Then 10 looks at once every 100 ms of the requests' clock, for 3 s: 300 looks.
    for (let at = start + 100; at < start + 3_100; at += 100) expect(await wave(at)).toEqual(Array(10).fill(0));
    const then = (await calls(bucket)) - before - first;
    console.log(`site guard: first 10 looks at once ${first} calls, then 300 looks over 3 s ${then} calls`);
    expect(then).toBeLessThanOrEqual(3);
  });

  it('answers every other visitor when the request whose look is under way is cut off by its client', async () => {
    // Requests through the deployed entry, each its own request in the isolate; the guard's object
    // held busy, so the first visitor's look at it is under way when its client goes away.
    expect(await cutOffFirst('pk_queue')).toEqual({
      first: 'AbortError',
      second: { status: 200, results: ['accepted'] },
      // And the isolate goes on answering the guard's looks.
      third: { status: 200, results: ['accepted'] },
    });
  });
});
