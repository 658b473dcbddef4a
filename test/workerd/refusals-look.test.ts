// The look every /collect takes at its site's refusal bucket (the site's guard), in the RelayState
// objects: an isolate trusts an answer for a while and, while one request's look is under way, the
// others take the answer it last had, so a burst of requests costs the site's bucket object about
// one call, not one per request. No request ever waits on another's call: in workerd a call belongs
// to the request that made it, and a request cut off by its client takes its call with it.
import { env, runInDurableObject, SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { CollectAnswer } from '../../src/api/collect.js';
import { createMemoryLimiter, refusalKey, SITE_REFUSALS, siteGuardWait, siteKey, visitorKey } from '../../src/relay/core/limits.js';
import { durableRefusals, REFUSAL_OBJECTS } from '../../src/relay/workers/refusals.js';
import { hash } from '../../src/relay/workers/state.js';
import { ORIGIN, track } from '../relay/suite/target.js';

const objectOf = (key: string) => hash(key) % REFUSAL_OBJECTS;
const object = (n: number) => env['RELAY_STATE'].get(env['RELAY_STATE'].idFromName(`refusals#${n}`));
/** Calls served so far by the object of bucket `key`. */
const calls = async (key: string) => ((await object(objectOf(key)).usage()) as { calls: number }).calls;

describe("the site's guard, looked at by every /collect", () => {
  it('costs one call for looks asked at once in an isolate, and still sees a guard another isolate closed', async () => {
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
    expect(first).toBeLessThanOrEqual(10);
    expect(then).toBeLessThanOrEqual(3);
  });

  it('answers every other visitor when the request whose look is under way is cut off by its client', async () => {
    // Requests through the deployed entry (SELF): each one a request of its own in the same isolate.
    const site = 'pk_queue';
    const guard = refusalKey(siteKey(site));
    const visitors: string[] = [];
    for (let i = 1; visitors.length < 3; i++) {
      const ip = `198.51.100.${i}`;
      const n = objectOf(refusalKey(visitorKey(site, ip)));
      if (n !== objectOf(guard) && !visitors.some((other) => objectOf(refusalKey(visitorKey(site, other))) === n)) visitors.push(ip);
    }
    const [first, second, third] = visitors as [string, string, string];
    const collect = (ip: string, signal?: AbortSignal) =>
      SELF.fetch('https://relay.example.com/collect', {
        method: 'POST',
        headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': ip },
        body: JSON.stringify({ key: site, batch: [track('act:cm:viewed', { 'str::email': `${crypto.randomUUID()}@example.com` })] }),
        ...(signal ? { signal } : {}),
      });
    const answered = async (response: Promise<Response>) => {
      const answer = await response;
      return { status: answer.status, results: ((await answer.json()) as CollectAnswer).results.map((result) => result.status) };
    };
    /** Within 10 s, or "no answer": a request that hangs must fail the test, not time it out. */
    const within = <T>(promise: Promise<T>) => Promise.race([promise, new Promise<string>((resolve) => setTimeout(() => resolve('no answer'), 10_000))]);
    /** Resolves once the request from `ip` has looked at its own bucket: its look at the guard started with it. */
    const looking = async (ip: string, before: number) => expect.poll(() => calls(refusalKey(visitorKey(site, ip)))).toBe(before + 1);

    // The guard's object is held busy, so a look at it stays under way until the test lets it go.
    // (The promise is the test's: one made inside the object could not be settled from here.)
    let letGo!: () => void;
    const free = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    const held = runInDurableObject(object(objectOf(guard)), async (_instance, state) => {
      await state.blockConcurrencyWhile(() => free);
    });
    const cutOff = new AbortController();
    const firstBefore = await calls(refusalKey(visitorKey(site, first)));
    const firstAnswer = collect(first, cutOff.signal).catch((error: Error) => error.name);
    await looking(first, firstBefore);
    const secondBefore = await calls(refusalKey(visitorKey(site, second)));
    const secondAnswer = answered(collect(second));
    await looking(second, secondBefore);
    // The first visitor's client goes away while its look is under way.
    cutOff.abort();
    expect(await firstAnswer).toBe('AbortError');
    letGo();
    await held;
    expect(await within(secondAnswer)).toEqual({ status: 200, results: ['accepted'] });
    // And the isolate goes on answering the guard's looks.
    expect(await within(answered(collect(third)))).toEqual({ status: 200, results: ['accepted'] });
  });
});
