/**
 * Requests through the deployed entry (SELF), each a request of its own in the worker's isolate, as
 * Cloudflare runs them; and a Durable Object held busy, so that a call to it stays under way until
 * the test lets it go. Together they cut a request off (its client goes away) while its call is
 * under way, and show whether any other request was waiting on that call.
 */
import { env, runInDurableObject, SELF } from 'cloudflare:test';
import { expect } from 'vitest';
import type { CollectAnswer } from '../../src/api/collect.js';
import { refusalKey, siteKey, visitorKey } from '../../src/relay/core/limits.js';
import { SUPPRESSION_REFRESH_MS } from '../../src/relay/state/suppression.js';
import { LOOK_CACHE_MS, LOOK_UNDER_WAY_MS, REFUSAL_OBJECTS } from '../../src/relay/workers/refusals.js';
import { hash } from '../../src/relay/workers/state.js';
import { ORIGIN, track } from '../relay/suite/target.js';

/** The number of the `refusals#n` object that holds bucket `key`. */
const refusalObjectOf = (key: string): number => hash(key) % REFUSAL_OBJECTS;
/** The stub of object `refusals#n`. */
const refusalObject = (n: number) => env['RELAY_STATE'].get(env['RELAY_STATE'].idFromName(`refusals#${n}`));
/** Calls served so far by the object of refusal bucket `key`. */
export const refusalCalls = async (key: string): Promise<number> => ((await refusalObject(refusalObjectOf(key)).usage()) as { calls: number }).calls;

/** A `/collect` of one track from address `ip` to `site` (one of the deployment's RELAY_SITES), through SELF. */
const selfCollect = (site: string, ip: string, signal?: AbortSignal): Promise<Response> =>
  SELF.fetch('https://relay.example.com/collect', {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': ip },
    body: JSON.stringify({ key: site, batch: [track('act:cm:viewed', { 'str::email': `${crypto.randomUUID()}@example.com` })] }),
    ...(signal ? { signal } : {}),
  });

/** The status and item statuses of a `/collect` answer, or "no answer" when none came within 10 s (a request that hangs fails the test rather than timing it out). */
async function answered(response: Promise<Response>): Promise<{ status: number; results: string[] } | 'no answer'> {
  const answer = response.then(async (got) => ({ status: got.status, results: ((await got.json()) as CollectAnswer).results.map((result) => result.status) }));
  return Promise.race([answer, new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), 10_000))]);
}

/** Addresses whose visitors' refusal buckets are in `count` objects of their own, none of them `apart`'s. */
function addressesApart(site: string, count: number, apart: number): string[] {
  const found: string[] = [];
  const objects = new Set([apart]);
  for (let i = 1; found.length < count; i++) {
    const ip = `198.51.100.${i}`;
    const n = refusalObjectOf(refusalKey(visitorKey(site, ip)));
    if (!objects.has(n)) {
      objects.add(n);
      found.push(ip);
    }
  }
  return found;
}

/** Resolves once the visitor of `site` at `ip` has looked at its refusal bucket (`before`: its object's calls until then). */
const lookedAtRefusals = (site: string, ip: string, before: number) => expect.poll(() => refusalCalls(refusalKey(visitorKey(site, ip)))).toBe(before + 1);

/**
 * Holds the object of `stub` busy (its input gate closed) until `letGo`: a call to it stays under
 * way meanwhile. The promise is the test's: one made inside the object could not be settled from here.
 */
export function holdObject(stub: unknown): { letGo: () => Promise<void> } {
  let free!: () => void;
  const freed = new Promise<void>((resolve) => {
    free = resolve;
  });
  const held = runInDurableObject(stub, async (_instance, state) => {
    await state.blockConcurrencyWhile(() => freed);
  });
  // Seen by `letGo`; an object reset meanwhile is not an unhandled rejection.
  held.catch(() => {});
  return {
    letGo: async () => {
      free();
      await held;
    },
  };
}

type Answered = Awaited<ReturnType<typeof answered>>;

/**
 * How long the isolate's relay (SELF's, one for every file of the pool worker) keeps what a request
 * read for the next ones: its copy of the suppression list, and a look at a refusal bucket (trusted,
 * then standing in for a look under way). The files before this one in the worker may have sent
 * requests through SELF moments ago; once this long has passed without one, the next request reads
 * everything itself, as the first request of a fresh isolate does.
 */
const KEPT_MS = Math.max(SUPPRESSION_REFRESH_MS, LOOK_CACHE_MS + LOOK_UNDER_WAY_MS) + 100;

/**
 * A first visitor's `/collect` is cut off by its client while its call to `held` (by default the
 * object of the site's guard) is under way, that object held busy; a second visitor's comes in
 * meanwhile, then the object is let go and a third visitor's follows. What each got: the first
 * "AbortError", the others their answer, or "no answer" when they waited on the first one's call.
 */
export async function cutOffFirst(site: string, held?: unknown): Promise<{ first: string; second: Answered; third: Answered }> {
  await new Promise((resolve) => setTimeout(resolve, KEPT_MS));
  const guard = refusalKey(siteKey(site));
  const [first, second, third] = addressesApart(site, 3, refusalObjectOf(guard)) as [string, string, string];
  const { letGo } = holdObject(held ?? refusalObject(refusalObjectOf(guard)));
  const cutOff = new AbortController();
  const [firstBefore, guardBefore] = [await refusalCalls(refusalKey(visitorKey(site, first))), held === undefined ? 0 : await refusalCalls(guard)];
  const firstAnswer = selfCollect(site, first, cutOff.signal).then(
    () => 'answered',
    (error: Error) => error.name,
  );
  // Its look at its own bucket counted: its look at the guard started with it. With another object
  // held, the look at the guard answered too: past it, the first request calls the held object.
  await lookedAtRefusals(site, first, firstBefore);
  if (held !== undefined) await expect.poll(() => refusalCalls(guard)).toBeGreaterThan(guardBefore);
  const secondBefore = await refusalCalls(refusalKey(visitorKey(site, second)));
  const secondAnswer = answered(selfCollect(site, second));
  await lookedAtRefusals(site, second, secondBefore);
  cutOff.abort();
  const firstGot = await firstAnswer;
  await letGo();
  return { first: firstGot, second: await secondAnswer, third: await answered(selfCollect(site, third)) };
}
