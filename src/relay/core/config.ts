/**
 * The relay's configuration, read once from environment variables (Node) or
 * Worker vars/secrets (same names) into one typed object. Every error names the variable.
 *
 * @example
 * const config = parseConfig(process.env);
 * config.sites.get('pk_demo')?.origins // ['https://shop.example.com']
 * @module
 */
import { baseUrlFor, isRegion } from '../../api/index.js';
import { DEFAULT_IDLE_SECONDS, DEFAULT_OUTBOX_LIMITS, DEFAULT_UNPROVEN, type OutboxLimits, type UnprovenLimits } from './outbox-limits.js';
import { RelayConfigError } from './errors.js';
import { applyPlan, parseSites, type SiteConfig } from './sites.js';
import { parseTokens, type TokenConfig } from './tokens.js';

export interface RelayConfig {
  /** `CDP_API_KEY`: never logged, never echoed */
  apiKey: string;
  /** `CDP_BASE_URL`, else the base of `CDP_REGION` */
  baseUrl: string;
  /** `RELAY_SITES` by key */
  sites: ReadonlyMap<string, SiteConfig>;
  /** `RELAY_TOKENS`, parsed: who may call the proxy (`/v1/...`) */
  tokens: TokenConfig[];
  /** `RELAY_IDENTITY_SECRET` */
  identitySecret: string | undefined;
  /**
   * `RELAY_IDENTITY_LEGACY_HASH=on`: also accept the value-only `user_hash` of earlier versions
   * (HMAC of the email, else the external ID, without its field). Weaker: such a hash made for
   * one field proves the same string in the other. For migrations only. @default false
   */
  identityLegacyHash: boolean;
  /** `RELAY_ADDRESS_LOOKUP=on` */
  addressLookup: boolean;
  /** `RELAY_ADDRESS_LOOKUP_MONTHLY_LIMIT`: lookups per site per calendar month (UTC) @default Infinity (no cap) */
  addressLookupMonthlyLimit: number;
  /** `RELAY_TRUST_PROXY`: addresses (or IPv4 CIDR ranges) whose `X-Forwarded-For` is believed */
  trustProxy: string[];
  /** `RELAY_IPV6_PREFIX`: IPv6 visitors are rate-limited per network of this many bits @default 64 */
  ipv6Prefix: number;
  /** `RELAY_COLLECT_PATH` @default '/collect' */
  collectPath: string;
  /** `/cdp.js` plus `RELAY_SCRIPT_PATH` (an alias less likely to be blocked) */
  scriptPaths: string[];
  /** `RELAY_BUDGET_MS`: how long one /collect may spend on the platform, retries included @default 8000 */
  budgetMs: number;
  /**
   * `RELAY_DEDUPE_WINDOW_HOURS`: how long an accepted item id is remembered, and how old an item may
   * be and still be accepted (older: `rejected`, reason `expired`). Announced as `window` in every
   * /collect answer. @default 7 days (the snippet keeps an item that long)
   */
  windowMs: number;
  /** `RELAY_PLATFORM_RATE`: platform calls per second for the key, shared by the whole deployment @default 10 */
  platformRate: number;
  /** `RELAY_DELIVERY_WAIT_MS`: how long a partial platform call waits for more entries @default 250 */
  deliveryWaitMs: number;
  /** `RELAY_DELIVERY_LEASE_MS`: how long a deliverer holds the entries it leased; a killed one's wait this long @default 30000 */
  deliveryLeaseMs: number;
  /** `RELAY_DELIVERY_LEAD_MS`: the lifetime of the deliverer's lead lock; a standby takes over this long after the leader died @default 5000 */
  deliveryLeadMs: number;
  /** `RELAY_DELIVERY_RETRY_MS`: how long an entry the platform did not apply (503, unreachable) waits before it goes again @default 5000 */
  deliveryRetryMs: number;
  /**
   * `RELAY_AMBIGUOUS`: what happens to `activities/create` entries whose call may or may not have
   * been applied: `hold` (dead-letter list, reason `ambiguous`: never a duplicate) or `resend`
   * (at least once) @default 'hold'
   */
  ambiguous: AmbiguousPolicy;
  /**
   * How much the outbox holds (Node): `RELAY_OUTBOX_MAX_PER_VISITOR`, `RELAY_OUTBOX_MAX_PER_SITE`,
   * `RELAY_OUTBOX_MAX` (entries waiting) and `RELAY_DEAD_LETTERS_MAX`. Past a limit `/collect`
   * answers `retry` with `Retry-After`. @default {@link DEFAULT_OUTBOX_LIMITS}
   */
  outboxLimits: OutboxLimits;
  /**
   * `RELAY_OUTBOX_IDLE_SECONDS`: while the outbox holds less than this many seconds of the key's
   * pace, a visitor past `RELAY_OUTBOX_MAX_PER_VISITOR` is still taken, up to that amount
   * (ingest/idle-room.ts); 0 turns it off @default {@link DEFAULT_IDLE_SECONDS}
   */
  outboxIdleSeconds: number;
  /**
   * What unproven items may take of a site (ingest/unproven.ts): `RELAY_OUTBOX_UNPROVEN_SHARE`, the
   * part of the outbox's site and total limits they may fill (0.5), and
   * `RELAY_UNPROVEN_PEOPLE_PER_MINUTE`, the identifies a minute that may create a person (600).
   */
  unproven: UnprovenLimits;
  /** `RELAY_LOG`: `info` one JSON line per request, `debug` also one per item with its result and reason, `off` none @default 'info' */
  logLevel: LogLevel;
  /** lifetime of the identity token handed to the browser @default 3600 */
  identityTtlSeconds: number;
}

type Env = Record<string, unknown>;

export type LogLevel = 'off' | 'info' | 'debug';
const LOG_LEVELS: readonly LogLevel[] = ['off', 'info', 'debug'];

function logLevel(env: Env): LogLevel {
  const raw = str(env, 'RELAY_LOG')?.toLowerCase() ?? 'info';
  if (!LOG_LEVELS.includes(raw as LogLevel)) throw new RelayConfigError('RELAY_LOG', `must be ${LOG_LEVELS.join(', ')}; got ${JSON.stringify(raw)}`);
  return raw as LogLevel;
}

/** The snippet keeps an item 7 days: the relay remembers ids as long, so a resend is always caught. */
export const DEFAULT_WINDOW_HOURS = 7 * 24;

function windowHours(env: Env): number {
  const hours = positive(env, 'RELAY_DEDUPE_WINDOW_HOURS', DEFAULT_WINDOW_HOURS);
  if (hours < 1) throw new RelayConfigError('RELAY_DEDUPE_WINDOW_HOURS', `must be at least 1 (hour), got ${hours}`);
  return hours;
}

function rate(env: Env): number {
  const perSecond = positive(env, 'RELAY_PLATFORM_RATE', 10);
  if (!(perSecond > 0)) throw new RelayConfigError('RELAY_PLATFORM_RATE', `must be more than 0 calls per second, got ${perSecond}`);
  return perSecond;
}

function whole(env: Env, name: string, fallback: number): number {
  const value = positive(env, name, fallback);
  if (!Number.isInteger(value) || value < 1) throw new RelayConfigError(name, `must be a whole number ≥ 1, got ${value}`);
  return value;
}

function unprovenLimits(env: Env): UnprovenLimits {
  const share = positive(env, 'RELAY_OUTBOX_UNPROVEN_SHARE', DEFAULT_UNPROVEN.share);
  if (!(share > 0 && share <= 1)) throw new RelayConfigError('RELAY_OUTBOX_UNPROVEN_SHARE', `must be more than 0 and at most 1, got ${share}`);
  return { share, peoplePerMinute: whole(env, 'RELAY_UNPROVEN_PEOPLE_PER_MINUTE', DEFAULT_UNPROVEN.peoplePerMinute) };
}

function outboxLimits(env: Env): OutboxLimits {
  const d = DEFAULT_OUTBOX_LIMITS;
  return {
    visitor: whole(env, 'RELAY_OUTBOX_MAX_PER_VISITOR', d.visitor),
    site: whole(env, 'RELAY_OUTBOX_MAX_PER_SITE', d.site),
    total: whole(env, 'RELAY_OUTBOX_MAX', d.total),
    dead: whole(env, 'RELAY_DEAD_LETTERS_MAX', d.dead),
  };
}

/** What to do with an entry whose call may or may not have been applied. */
export type AmbiguousPolicy = 'hold' | 'resend';

const ambiguousPolicy = (env: Env): AmbiguousPolicy => parseAmbiguousPolicy(str(env, 'RELAY_AMBIGUOUS')?.toLowerCase());

/** `RELAY_AMBIGUOUS`: `hold` (the default) or `resend`; anything else names the variable. */
export function parseAmbiguousPolicy(value: string | undefined): AmbiguousPolicy {
  if (value === undefined || value === '' || value === 'hold') return 'hold';
  if (value === 'resend') return 'resend';
  throw new RelayConfigError('RELAY_AMBIGUOUS', `must be "hold" (the default) or "resend"; got ${JSON.stringify(value)}`);
}

const str = (env: Env, name: string): string | undefined => {
  const value = env[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new RelayConfigError(name, `must be a string, got ${typeof value}`);
  return value.trim() === '' ? undefined : value.trim();
};

function positive(env: Env, name: string, fallback: number): number {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  const number = Number(raw);
  if (!Number.isFinite(number) || number < 0) throw new RelayConfigError(name, `must be a number ≥ 0, got ${JSON.stringify(raw)}`);
  return number;
}

function atLeast(env: Env, name: string, fallback: number, min: number): number {
  const value = positive(env, name, fallback);
  if (value < min) throw new RelayConfigError(name, `must be at least ${min}, got ${value}`);
  return value;
}

function path(env: Env, name: string, fallback: string | undefined): string | undefined {
  const value = str(env, name) ?? fallback;
  if (value !== undefined && !/^\/[A-Za-z0-9/_.-]*$/.test(value))
    throw new RelayConfigError(name, `must be a path starting with "/", got ${JSON.stringify(value)}`);
  return value;
}

/** Reads the relay's variables (and the relay's optional extras) from `env`; throws RelayConfigError naming the variable. */
export function parseConfig(env: Env): RelayConfig {
  const apiKey = str(env, 'CDP_API_KEY');
  if (apiKey === undefined) throw new RelayConfigError('CDP_API_KEY', 'is not set; the relay needs the platform key (a secret) to forward anything');
  const region = str(env, 'CDP_REGION') ?? 'default';
  if (!isRegion(region)) throw new RelayConfigError('CDP_REGION', `must be "default", "au" or "eu", got ${JSON.stringify(region)}`);
  const explicit = str(env, 'CDP_BASE_URL');
  if (explicit !== undefined && !/^https?:\/\/[^/]+/.test(explicit))
    throw new RelayConfigError('CDP_BASE_URL', `must be an http(s) URL, got ${JSON.stringify(explicit)}`);
  const sites = parseSites(str(env, 'RELAY_SITES'));
  applyPlan(sites, env['RELAY_PLAN']);
  const identitySecret = str(env, 'RELAY_IDENTITY_SECRET');
  for (const site of sites.values()) {
    // Without a secret nothing can be proven: "optional" still keeps its promise (every item may
    // only create), "required" would refuse everything.
    if (site.verify === 'required' && identitySecret === undefined) {
      throw new RelayConfigError(
        'RELAY_IDENTITY_SECRET',
        `is not set, but site ${site.name} has verify "required"; set the HMAC secret or use verify "optional"`,
      );
    }
  }
  if (identitySecret !== undefined && identitySecret.length < 16) throw new RelayConfigError('RELAY_IDENTITY_SECRET', 'must be at least 16 characters');
  const legacyHash = str(env, 'RELAY_IDENTITY_LEGACY_HASH')?.toLowerCase() ?? 'off';
  if (legacyHash !== 'on' && legacyHash !== 'off')
    throw new RelayConfigError('RELAY_IDENTITY_LEGACY_HASH', `must be "on" or "off", got ${JSON.stringify(legacyHash)}`);
  const lookup = str(env, 'RELAY_ADDRESS_LOOKUP') ?? 'off';
  if (lookup !== 'on' && lookup !== 'off') throw new RelayConfigError('RELAY_ADDRESS_LOOKUP', `must be "on" or "off", got ${JSON.stringify(lookup)}`);
  const limit = positive(env, 'RELAY_ADDRESS_LOOKUP_MONTHLY_LIMIT', Infinity);
  const trustProxy = (str(env, 'RELAY_TRUST_PROXY') ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of trustProxy) {
    if (!/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(entry))
      throw new RelayConfigError('RELAY_TRUST_PROXY', `${JSON.stringify(entry)} is not an IP address or IPv4 CIDR range`);
  }
  const ipv6Prefix = positive(env, 'RELAY_IPV6_PREFIX', 64);
  if (!Number.isInteger(ipv6Prefix) || ipv6Prefix < 16 || ipv6Prefix > 128) {
    throw new RelayConfigError('RELAY_IPV6_PREFIX', `must be a whole number of bits from 16 to 128 (64: one subscriber's network), got ${ipv6Prefix}`);
  }
  const alias = path(env, 'RELAY_SCRIPT_PATH', undefined);
  let tokens: TokenConfig[];
  try {
    tokens = parseTokens(str(env, 'RELAY_TOKENS'));
  } catch (cause) {
    throw new RelayConfigError('RELAY_TOKENS', (cause as Error).message.replace(/^RELAY_TOKENS:? ?/, ''), { cause });
  }
  return {
    apiKey,
    baseUrl: (explicit ?? baseUrlFor(region)).replace(/\/+$/, ''),
    sites,
    tokens,
    identitySecret,
    identityLegacyHash: legacyHash === 'on',
    addressLookup: lookup === 'on',
    addressLookupMonthlyLimit: limit,
    trustProxy,
    ipv6Prefix,
    collectPath: path(env, 'RELAY_COLLECT_PATH', '/collect') ?? '/collect',
    scriptPaths: alias && alias !== '/cdp.js' ? ['/cdp.js', alias] : ['/cdp.js'],
    budgetMs: positive(env, 'RELAY_BUDGET_MS', 8_000),
    windowMs: windowHours(env) * 3600_000,
    platformRate: rate(env),
    deliveryWaitMs: positive(env, 'RELAY_DELIVERY_WAIT_MS', 250),
    // A lease keeps 2 s to settle and starts no call with less than 1 s left.
    deliveryLeaseMs: atLeast(env, 'RELAY_DELIVERY_LEASE_MS', 30_000, 3_500),
    deliveryLeadMs: atLeast(env, 'RELAY_DELIVERY_LEAD_MS', 5_000, 500),
    deliveryRetryMs: atLeast(env, 'RELAY_DELIVERY_RETRY_MS', 5_000, 100),
    ambiguous: ambiguousPolicy(env),
    outboxLimits: outboxLimits(env),
    outboxIdleSeconds: positive(env, 'RELAY_OUTBOX_IDLE_SECONDS', DEFAULT_IDLE_SECONDS),
    unproven: unprovenLimits(env),
    logLevel: logLevel(env),
    identityTtlSeconds: 3600,
  };
}
