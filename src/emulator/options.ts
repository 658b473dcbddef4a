/**
 * Options of the emulator, typed once; {@link resolveOptions} applies every default in one place.
 * @module
 */
import { RATE_LIMITS, isRegion, type Plan, type Region } from '../api/index.js';
import type { EmulatorSnapshot } from './snapshot.js';

/**
 * Makes an endpoint fail on purpose: `{"person/merge": {"status": 503, "rate": 0.2}}`; `*` matches
 * every endpoint. `{"activities/create": {"status": 504, "applied": true}}` records the activities,
 * then answers 504: the outcome a caller cannot tell from a failure.
 */
export interface FaultSpec {
  /** HTTP status to answer with (429 answers the rate-limit body); required unless `drop` is set */
  status?: number;
  /** share of calls that fail, 0–1 @default 1 */
  rate?: number;
  /** error message of the general error body @default 'Injected fault' */
  message?: string;
  /** wait this long before answering (ms) @default 0 */
  delayMs?: number;
  /** apply the call to the state first, then fail: the caller sees a failure of a call that took effect @default false */
  applied?: boolean;
  /** no answer instead of `status`: `close` drops the connection, `hang` keeps it open until the caller gives up */
  drop?: 'close' | 'hang';
  /** only calls whose body contains this text fail (an email: a call naming one person) @default every call */
  naming?: string;
}
export type Faults = Record<string, FaultSpec>;

/** Where a location came from, for the IP geolocation and address lookup stand-ins. */
export interface GeoPoint {
  country_name?: string;
  region_name?: string;
  city_name?: string;
  lat?: number;
  lng?: number;
}

export interface EmulatorOptions {
  /** the accepted `X-Api-Key` @default 'dev-key' */
  key?: string;
  /** the instance's region (a request addressed to another region's host is answered 401) @default 'default' */
  region?: Region;
  /** the plan: address lookup needs `business`; picks the default rate limit @default 'business' */
  plan?: Plan;
  /** requests per second; `true` uses the plan's rate (10 professional, 30 business); off when absent */
  rateLimit?: number | boolean;
  /** ms every /v1 call the rate limit lets through takes before it is applied and answered, as a distant platform would @default 0 */
  latencyMs?: number;
  /**
   * the rate limit counts each /v1 call, at random, as it arrives or this many ms later (jitter's
   * worst case within that range), on the platform's own clock, while its answer still comes
   * `latencyMs` after it arrived (when that is longer): calls that left at an even pace are counted
   * unevenly, and their answers do not show it @default 0
   */
  jitterMs?: number;
  /** endpoints that fail on purpose */
  faults?: Faults;
  /** starting state (the `--data` file's content) */
  seed?: Partial<EmulatorSnapshot>;
  /** instance name shown in tags' `instance_id` @default 'emulator' */
  instanceId?: string;
  /** clock in ms @default Date.now */
  now?: () => number;
  /** random source for faults @default Math.random */
  random?: () => number;
  /** IP geolocation; the default knows the documentation ranges 192.0.2/24, 198.51.100/24, 203.0.113/24 */
  geolocate?: (ip: string) => GeoPoint | undefined;
  /** called after every change (persistence hooks in here) */
  onChange?: () => void;
  /** told of each call a fault strikes, with its endpoint and body, before it fails (a test counts what the failed calls carried) */
  onFault?: (call: FaultedCall) => void;
}

/** A call a fault struck: its endpoint id, its body as sent, and whether it was applied before it failed. */
export interface FaultedCall {
  endpoint: string;
  body: string;
  applied: boolean;
}

export interface ResolvedOptions {
  key: string;
  region: Region;
  plan: Plan;
  /** requests per second, 0 = off */
  rateLimit: number;
  /** ms per call, 0 = none */
  latencyMs: number;
  /** at most this many ms before a call is counted, 0 = none */
  jitterMs: number;
  faults: Faults;
  instanceId: string;
  now: () => number;
  random: () => number;
  geolocate: (ip: string) => GeoPoint | undefined;
  onChange: () => void;
  onFault: ((call: FaultedCall) => void) | undefined;
}

const TEST_NETS: Array<[string, GeoPoint]> = [
  ['192.0.2.', { country_name: 'France', region_name: 'Île-de-France', city_name: 'Paris', lat: 48.8566, lng: 2.3522 }],
  ['198.51.100.', { country_name: 'Australia', region_name: 'New South Wales', city_name: 'Sydney', lat: -33.8688, lng: 151.2093 }],
  ['203.0.113.', { country_name: 'United States', region_name: 'New York', city_name: 'New York', lat: 40.7128, lng: -74.006 }],
];

/** Offline stand-in for IP geolocation: only the RFC 5737 documentation ranges resolve. */
export function defaultGeolocate(ip: string): GeoPoint | undefined {
  return TEST_NETS.find(([prefix]) => ip.startsWith(prefix))?.[1];
}

/** Applies defaults once; throws `TypeError`/`RangeError` naming the option. */
export function resolveOptions(options: EmulatorOptions = {}): ResolvedOptions {
  const key = options.key ?? 'dev-key';
  if (typeof key !== 'string' || key === '') throw new TypeError('createEmulator(options): key must be a non-empty string');
  const region = options.region ?? 'default';
  if (!isRegion(region)) throw new RangeError(`createEmulator(options): region must be default, au or eu; got ${JSON.stringify(region)}`);
  const plan = options.plan ?? 'business';
  if (!Object.hasOwn(RATE_LIMITS, plan)) throw new RangeError(`createEmulator(options): plan must be professional or business; got ${JSON.stringify(plan)}`);
  const rateLimit = options.rateLimit === true ? RATE_LIMITS[plan] : options.rateLimit === false || options.rateLimit === undefined ? 0 : options.rateLimit;
  if (!Number.isFinite(rateLimit) || rateLimit < 0)
    throw new RangeError('createEmulator(options): rateLimit must be a number of requests per second ≥ 0, or true');
  const latencyMs = options.latencyMs ?? 0;
  if (typeof latencyMs !== 'number' || !Number.isFinite(latencyMs) || latencyMs < 0)
    throw new RangeError(`createEmulator(options): latencyMs must be a number of milliseconds ≥ 0; got ${JSON.stringify(latencyMs)}`);
  const jitterMs = options.jitterMs ?? 0;
  if (typeof jitterMs !== 'number' || !Number.isFinite(jitterMs) || jitterMs < 0)
    throw new RangeError(`createEmulator(options): jitterMs must be a number of milliseconds ≥ 0; got ${JSON.stringify(jitterMs)}`);
  const faults = options.faults ?? {};
  checkFaults(faults);
  return {
    key,
    region,
    plan,
    rateLimit,
    latencyMs,
    jitterMs,
    faults,
    instanceId: options.instanceId ?? 'emulator',
    now: options.now ?? Date.now,
    random: options.random ?? Math.random,
    geolocate: options.geolocate ?? defaultGeolocate,
    onChange: options.onChange ?? (() => {}),
    onFault: options.onFault,
  };
}

/** Refuses a faults object that would not work, naming the entry. */
export function checkFaults(faults: unknown): asserts faults is Faults {
  if (typeof faults !== 'object' || faults === null || Array.isArray(faults))
    throw new TypeError('faults must be an object keyed by endpoint ID (e.g. "person/merge") or "*"');
  for (const [id, spec] of Object.entries(faults)) {
    const s = spec as Partial<FaultSpec> | null;
    if (typeof s !== 'object' || s === null) throw new TypeError(`faults[${JSON.stringify(id)}] must be an object like {"status": 503}`);
    if (s.drop !== undefined && s.drop !== 'close' && s.drop !== 'hang') throw new TypeError(`faults[${JSON.stringify(id)}].drop must be "close" or "hang"`);
    if ((s.drop === undefined || s.status !== undefined) && (!Number.isInteger(s.status) || s.status! < 400 || s.status! > 599)) {
      throw new TypeError(`faults[${JSON.stringify(id)}].status must be an HTTP error status (400–599)`);
    }
    if (s.naming !== undefined && (typeof s.naming !== 'string' || s.naming === ''))
      throw new TypeError(`faults[${JSON.stringify(id)}].naming must be a non-empty string`);
    if (s.applied !== undefined && typeof s.applied !== 'boolean') throw new TypeError(`faults[${JSON.stringify(id)}].applied must be true or false`);
    if (s.rate !== undefined && (typeof s.rate !== 'number' || s.rate < 0 || s.rate > 1))
      throw new RangeError(`faults[${JSON.stringify(id)}].rate must be between 0 and 1`);
  }
}
