/**
 * Refusal buckets on Workers (core/limits.ts `VISITOR_REFUSALS`, `SITE_REFUSALS`), kept in the
 * `RelayState` Durable Objects so that every isolate sees the same counts: the request that
 * answers a visitor, the isolate that met a refusal in a request, and the Durable Object whose
 * alarm delivers (it charges with `chargeDelivered(durableRefusals(env.RELAY_STATE), entries,
 * wholeCall, now)` from the engine's `onRefused`). A bucket is one row in one of
 * {@link REFUSAL_OBJECTS} objects, by a hash of its key (buckets.ts keeps the rows).
 *
 * Looking (charge 0) is what every `/collect` does for its visitor and its site: a look that found
 * a token is trusted by the isolate for {@link LOOK_CACHE_MS}, and while one request's look at a
 * key is under way the isolate's other requests take the answer it last had for that key (if
 * that answer is less than {@link LOOK_CACHE_MS} + {@link LOOK_UNDER_WAY_MS} old), so a busy site
 * costs each isolate about one call a second for its guard however many requests come, and a
 * visitor's cut-off may come up to two seconds late. A request never waits on another request's
 * call: in workerd a call belongs to the request that made it, and a request whose client goes
 * away takes its unanswered calls with it, so a promise shared with the others would never settle
 * and they would hang (test/workerd/refusals-look.test.ts). A request with no answer to take (the
 * isolate's first ones, or a key not looked at for a while) asks itself.
 * @module
 */
import type { DurableObjectNamespace } from '@cloudflare/workers-types/index.ts';
import type { LimitDecision, RateLimiter } from '../core/limits.js';
import { createLastValues, type Kept } from '../core/last-value.js';
import { hash, type RelayState } from './state.js';

/** How many objects hold the refusal buckets of a deployment. */
export const REFUSAL_OBJECTS = 16;
/** How long an isolate trusts a look that found a token. */
export const LOOK_CACHE_MS = 1_000;
/** How long a look counts as under way: one unanswered by then (its request cut off) no longer stands for the others. */
export const LOOK_UNDER_WAY_MS = 1_000;

/** `decision`, asked at `at`, as it stands at `now`: a closed bucket's wait counted down (it refills meanwhile). */
function aged({ value: decision, at }: Kept<LimitDecision>, now: number): LimitDecision {
  if (decision.ok) return decision;
  const retryAfterMs = decision.retryAfterMs - (now - at);
  return retryAfterMs > 0 ? { ok: false, retryAfterMs } : { ok: true, retryAfterMs: 0 };
}

/**
 * A {@link RateLimiter} whose refusal buckets (keys `refusals:…`, charged or looked at) and sites'
 * budgets of new people (`people:…`, ingest/unproven.ts) live in the `RelayState` objects; every
 * other call goes to `fallback` (the request buckets: the Rate
 * Limiting binding, or the isolate's memory).
 */
export function durableRefusals(namespace: DurableObjectNamespace<RelayState>, fallback?: RateLimiter, options: { cacheMs?: number } = {}): RateLimiter {
  const cacheMs = options.cacheMs ?? LOOK_CACHE_MS;
  /** the last answer per key (a found token trusted for `cacheMs`; any answer stands in for a look under way) */
  const answers = createLastValues<LimitDecision>({
    freshMs: cacheMs,
    trusted: (decision) => decision.ok,
    underWayMs: LOOK_UNDER_WAY_MS,
    standInMs: cacheMs + LOOK_UNDER_WAY_MS,
  });
  const object = (key: string) => namespace.get(namespace.idFromName(`refusals#${hash(key) % REFUSAL_OBJECTS}`));
  const elsewhere = (key: string): RateLimiter => {
    if (!fallback) throw new Error(`durableRefusals holds refusal buckets only, not ${key.split(':')[0]}`);
    return fallback;
  };
  return {
    // A request's own buckets (its visitor's, its site's cap) are all the fallback's.
    limitAll: (asks, now) => (asks.length === 0 ? Promise.resolve({ ok: true, retryAfterMs: 0 }) : elsewhere(asks[0]!.key).limitAll(asks, now)),
    async limit(key, rate, now, charge) {
      // Refusal buckets are charged or looked at; a budget of people is taken from (no charge).
      const durable = key.startsWith('refusals:') ? charge !== undefined : key.startsWith('people:');
      if (!durable) return elsewhere(key).limit(key, rate, now, charge);
      if (charge !== 0) {
        const decision = (await object(key).bucket(key, rate.perSecond, rate.burst, now, charge)) as LimitDecision;
        answers.forget(key);
        return decision;
      }
      const look = async () => (await object(key).bucket(key, rate.perSecond, rate.burst, now, 0)) as LimitDecision;
      return aged(await answers.get(key, now, look), now);
    },
  };
}
