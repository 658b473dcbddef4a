/**
 * Delivery on Workers: each outbox object's alarm runs a round of the relay's delivery engine
 * (deliver/round.ts) over its own entries, and every call takes a slot from one pacer object per
 * platform key, so the whole deployment keeps to the key's rate (`RELAY_PLATFORM_RATE`).
 * @module
 */
import type { AnalyticsEngineDataset, DurableObjectNamespace } from '@cloudflare/workers-types/index.ts';
import { sha256 } from '@noble/hashes/sha2.js';
import { systemClock } from '../core/clock.js';
import { parseConfig, type RelayConfig } from '../core/config.js';
import { createUpstream, sharedBackoff } from '../deliver/caller.js';
import type { EngineOptions } from '../deliver/engine.js';
import { withEntries } from '../state/item-text.js';
import type { Outbox, Pacer } from '../state/outbox.js';
import { DEFAULT_PLATFORM_RATE, paceInterval } from '../state/pace.js';
import { MAX_PACER_WAIT_MS } from '../deliver/slots.js';
import { fetchTransport } from '../deliver/transport.js';
import { RelayConfigError } from '../core/errors.js';
import { chargeDelivered } from '../core/limits.js';
import { createConsoleLogger } from '../core/logging.js';
import { analyticsObserver } from './analytics.js';
import { durableRefusals } from './refusals.js';
import { teachShapes } from './shapes.js';
import type { RelayState } from './state.js';

/** How long one platform call may take before it counts as unanswered (ambiguous). */
const CALL_TIMEOUT_MS = 10_000;

/** What delivery reads of the Worker's env (the vars, the pacer's namespace, Analytics Engine): a part of `RelayEnv`. */
export interface DeliveryEnv {
  RELAY_STATE: DurableObjectNamespace<RelayState>;
  ANALYTICS?: AnalyticsEngineDataset;
  [name: string]: unknown;
}

/** The pacer object of a platform key: named by a digest, so the key itself is in no object's name. */
export function pacerName(baseUrl: string, apiKey: string): string {
  const digest = sha256(new TextEncoder().encode(`${baseUrl}\u0000${apiKey}`));
  return `pacer:${[...digest.subarray(0, 12)].map((byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * A {@link Pacer} in one {@link RelayState} object: every isolate of the deployment spends the same
 * budget. `waitUpToMs`: how long a deliver call waits inside the object for its slot rather than
 * being answered the wait (RelayState.take); proxy calls are always answered at once. `now`: this
 * isolate's clock, for the end of a hold (the object grants on its own).
 */
export function createDurablePacer(
  namespace: DurableObjectNamespace<RelayState>,
  name: string,
  rate: number,
  waitUpToMs = 0,
  now: () => number = Date.now,
): Pacer {
  // The calls leave from many outbox objects, each spacing only its own (deliver/spacer.ts): the
  // object keeps the key's send margin between its grants, so ten calls span a second and the
  // margin (widened by the key's 429s: state/margin.ts), and the spread of arrivals it measures
  // (workers/pacer-slot.ts). The object grants on its own clock; `now` only tells it how far this
  // isolate's clock and request are from it.
  const interval = paceInterval(rate);
  const id = namespace.idFromName(name);
  // A stub per call: a stub belongs to the request (or batch) that made it.
  return {
    take: async (now, priority, turns) =>
      (await namespace.get(id).take(name, now, priority, interval, turns, priority === 'deliver' ? waitUpToMs : 0)) as number,
    // With this isolate's clock (`now`) as it asks: the object holds as long from its own clock.
    hold: async (until) => {
      await namespace.get(id).hold(name, until, now());
    },
    // Every outbox object delivers through this one object: merges of one person take turns here.
    giveBack: async (ids, now) => {
      await namespace.get(id).giveBack(name, [...ids], now);
    },
  };
}

/** `RELAY_PLATFORM_RATE`: platform calls per second for the key. */
export function platformRate(env: DeliveryEnv): number {
  const rate = Number(env['RELAY_PLATFORM_RATE'] ?? DEFAULT_PLATFORM_RATE);
  if (!(Number.isFinite(rate) && rate > 0))
    throw new RelayConfigError('RELAY_PLATFORM_RATE', 'must be a number of platform calls per second above 0 (10 on the professional plan, 30 on business)');
  return rate;
}

/**
 * The deployment's pacer: one object per platform key. A deliver call waits in it for its slot as
 * long as a leased entry may wait for one (MAX_PACER_WAIT_MS), so each call costs it one request.
 */
export function keyPacer(env: DeliveryEnv, config: RelayConfig): Pacer {
  return createDurablePacer(env.RELAY_STATE, pacerName(config.baseUrl, config.apiKey), platformRate(env), MAX_PACER_WAIT_MS);
}

// The env object is stable per isolate: parse once per env.
const configs = new WeakMap<object, RelayConfig>();

/** The Worker's configuration, as its outbox objects read it from their own env (the same vars). */
export function workerConfig(env: DeliveryEnv): RelayConfig {
  const config = configs.get(env) ?? parseConfig(env);
  configs.set(env, config);
  return config;
}

/** What an outbox object's rounds deliver with: the key, the sites, the pacer, the platform caller. */
export function shardEngine(env: DeliveryEnv, outbox: Outbox, owner: string): EngineOptions {
  const config = workerConfig(env);
  const observer = env.ANALYTICS ? analyticsObserver(env.ANALYTICS) : undefined;
  const upstream = createUpstream({
    baseUrl: config.baseUrl,
    apiKey: config.apiKey,
    transport: fetchTransport(fetch.bind(globalThis)),
    timeoutMs: CALL_TIMEOUT_MS,
    backoff: sharedBackoff(config.baseUrl),
    now: Date.now,
    onCall: observer?.upstream,
  });
  return {
    outbox,
    pacer: keyPacer(env, config),
    upstream,
    clock: systemClock,
    sites: config.sites,
    ambiguous: config.ambiguous,
    owner,
    callTimeoutMs: CALL_TIMEOUT_MS,
    retryMs: config.deliveryRetryMs,
    onDelivery: observer?.delivery,
    // What the platform took teaches the sites' RelayState objects, which ingest asks while a guard is closed (shapes.ts).
    onTaken: (entries) => void teachShapes(env.RELAY_STATE, withEntries(entries), Date.now()).catch(() => {}),
    // What the platform refused after acceptance counts against its visitors (and, for a call
    // refused as a whole, its site), in the refusal buckets every isolate reads.
    onRefused: (entries, wholeCall) => void chargeDelivered(durableRefusals(env.RELAY_STATE), entries, wholeCall, Date.now()).catch(() => {}),
    onCutCall: (sites) =>
      void chargeDelivered(
        durableRefusals(env.RELAY_STATE),
        sites.map((site) => ({ site, visitor: '' })),
        true,
        Date.now(),
      ).catch(() => {}),
    logger: createConsoleLogger(config.logLevel),
  };
}
