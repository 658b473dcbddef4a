/**
 * Refusal buckets on Workers (core/limits.ts `VISITOR_REFUSALS`, `SITE_REFUSALS`), kept in the
 * `RelayState` Durable Objects so that every isolate sees the same counts: the request that
 * answers a visitor, the isolate that met a refusal in a request, and the Durable Object whose
 * alarm delivers (it charges with `chargeDelivered(durableRefusals(env.RELAY_STATE), entries,
 * wholeCall, now)` from the engine's `onRefused`). A bucket is one row in one of
 * {@link REFUSAL_OBJECTS} objects, by a hash of its key (buckets.ts keeps the rows).
 *
 * Looking (charge 0) is what every `/collect` does for its visitor and its site: a look that found
 * a token is remembered in the isolate for {@link LOOK_CACHE_MS}, and the looks of one key an
 * isolate asks while one is under way share its answer, so a busy site costs each isolate about
 * one call a second for its guard however many requests wait on it, and a visitor's cut-off may
 * come that much late.
 * @module
 */
import type { DurableObjectNamespace } from '@cloudflare/workers-types/index.ts';
import type { LimitDecision, RateLimiter } from '../core/limits.js';
import { hash, type RelayState } from './state.js';

/** How many objects hold the refusal buckets of a deployment. */
export const REFUSAL_OBJECTS = 16;
/** How long an isolate trusts a look that found a token. */
export const LOOK_CACHE_MS = 1_000;
/** Looks remembered per isolate, at most (the oldest forgotten first: forgetting only asks again). */
const MAX_CACHED = 10_000;
/**
 * A {@link RateLimiter} whose refusal buckets (keys `refusals:…`, charged or looked at) and sites'
 * budgets of new people (`people:…`, ingest/unproven.ts) live in the `RelayState` objects; every
 * other call goes to `fallback` (the request buckets: the Rate
 * Limiting binding, or the isolate's memory).
 */
export function durableRefusals(namespace: DurableObjectNamespace<RelayState>, fallback?: RateLimiter, options: { cacheMs?: number } = {}): RateLimiter {
  const cacheMs = options.cacheMs ?? LOOK_CACHE_MS;
  const looked = new Map<string, number>();
  /** looks asked and not yet answered, by key */
  const inFlight = new Map<string, Promise<LimitDecision>>();
  const object = (key: string) => namespace.get(namespace.idFromName(`refusals#${hash(key) % REFUSAL_OBJECTS}`));
  return {
    async limit(key, rate, now, charge) {
      // Refusal buckets are charged or looked at; a budget of people is taken from (no charge).
      const durable = key.startsWith('refusals:') ? charge !== undefined : key.startsWith('people:');
      if (!durable) {
        if (!fallback) throw new Error(`durableRefusals holds refusal buckets only, not ${key.split(':')[0]}`);
        return fallback.limit(key, rate, now, charge);
      }
      if (charge !== 0) {
        const decision = (await object(key).bucket(key, rate.perSecond, rate.burst, now, charge)) as LimitDecision;
        looked.delete(key);
        return decision;
      }
      if ((looked.get(key) ?? 0) > now) return { ok: true, retryAfterMs: 0 };
      // Looks of one key at once share one call: every /collect looks at its site's bucket.
      const flying = inFlight.get(key);
      if (flying !== undefined) return flying;
      const look = (async () => {
        try {
          const decision = (await object(key).bucket(key, rate.perSecond, rate.burst, now, 0)) as LimitDecision;
          looked.delete(key);
          if (decision.ok && cacheMs > 0) {
            looked.set(key, now + cacheMs);
            if (looked.size > MAX_CACHED) looked.delete(looked.keys().next().value as string);
          }
          return decision;
        } finally {
          inFlight.delete(key);
        }
      })();
      inFlight.set(key, look);
      return look;
    },
  };
}
