// The look every /collect takes at its site's refusal bucket (the site's guard), in the RelayState
// objects: the looks one isolate asks while one is under way share its answer, so a burst of
// requests costs the site's bucket object one call, not one per request.
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createMemoryLimiter, refusalKey, SITE_REFUSALS, siteGuardWait, siteKey } from '../../src/relay/core/limits.js';
import { durableRefusals, REFUSAL_OBJECTS } from '../../src/relay/workers/refusals.js';
import { hash } from '../../src/relay/workers/state.js';

const calls = async (key: string) => {
  const namespace = env['RELAY_STATE'];
  return ((await namespace.get(namespace.idFromName(`refusals#${hash(key) % REFUSAL_OBJECTS}`)).usage()) as { calls: number }).calls;
};

describe("the site's guard, looked at by every /collect", () => {
  it('costs one call for looks asked at once in an isolate, and still sees a guard another isolate closed', async () => {
    const site = `pk_look_${crypto.randomUUID().slice(0, 8)}`;
    const bucket = refusalKey(siteKey(site));
    const now = Date.now();
    const isolate = durableRefusals(env['RELAY_STATE'], createMemoryLimiter(), { cacheMs: 0 });
    const before = await calls(bucket);
    expect(await Promise.all(Array.from({ length: 20 }, () => siteGuardWait(isolate, site, now)))).toEqual(Array(20).fill(0));
    expect(await calls(bucket)).toBe(before + 1);

    // Another isolate closes the guard (refused calls charged); the next looks here see it closed.
    const other = durableRefusals(env['RELAY_STATE'], createMemoryLimiter());
    await other.limit(bucket, SITE_REFUSALS, now, SITE_REFUSALS.burst + 1);
    const waits = await Promise.all(Array.from({ length: 5 }, () => siteGuardWait(isolate, site, now)));
    expect(waits.every((wait) => wait > 0)).toBe(true);
  });
});
