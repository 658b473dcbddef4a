/**
 * The relay's configuration, read once from environment variables (Node) or
 * Worker vars/secrets (same names) into one typed object. Every error names the variable.
 *
 * @example
 * const config = parseConfig(process.env);
 * config.sites.get('pk_demo')?.origins // ['https://shop.example.com']
 * @module
 */
import { baseUrlFor, DEFAULT_PERSON_MERGE_BY, isRecord, isRegion, parseFieldId } from '../../api/index.js';
import { activityRules, type ActivityRules } from '../../plan/rules.js';
import { type Plan, parsePlan, PlanError } from '../../plan/schema.js';
import { DEFAULT_OUTBOX_LIMITS, type OutboxLimits } from '../state/outbox.js';
import { RelayConfigError } from './errors.js';
import type { Rate } from './limits.js';
import { parseTokens, type TokenConfig } from './tokens.js';

/** What an unproven browser may write (docs/security.md): `required` nothing, `optional` create people, `open` also add events to anyone it names, `off` anything. */
export type Verify = 'off' | 'open' | 'optional' | 'required';

/** One site of `RELAY_SITES`: a public key, where it may be used from and what it may send. */
export interface SiteConfig {
  /** the public key the snippet sends as `key` */
  key: string;
  /** shown in logs instead of the key @default key */
  name: string;
  /** exact origins (`https://shop.example.com`) or one-level wildcards (`https://*.example.com`) */
  origins: string[];
  /** accept requests without `Origin` (servers, curl) @default false */
  allowNoOrigin: boolean;
  /** activity IDs a browser may send; `undefined` = any */
  activities: ReadonlySet<string> | undefined;
  /** person field IDs a browser may send; `undefined` = any */
  fields: ReadonlySet<string> | undefined;
  /** what an unproven browser may write (docs/security.md); `off` trusts browsers @default 'optional' */
  verify: Verify;
  /** `subscribe_unverified`: a person created by an unproven identify gets email permission (`bol::p`) as sent, or the platform's default (subscribed) @default false: created unsubscribed */
  subscribeUnverified?: boolean | undefined;
  /** person/merge `merge_by` @default ['str::email', 'str::ei'] */
  mergeBy: string[];
  /** `visitor_rate_limit`: a token bucket per visitor (client address) @default {perSecond: 10, burst: 50} */
  visitorRateLimit: Rate;
  /** `rate_limit`: an explicit cap on the whole site's requests, across all its visitors @default none */
  rateLimit: Rate | undefined;
  /** from `RELAY_PLAN`: per activity, the attributes a browser may send, their types, which are required @default none (no plan) */
  attributeRules?: ActivityRules | undefined;
}

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

const VERIFY: readonly Verify[] = ['off', 'open', 'optional', 'required'];

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

/** `https://shop.example.com` → itself; `https://*.example.com` kept as a pattern; anything else refused. */
function normaliseOrigin(origin: unknown, where: string): string {
  if (typeof origin !== 'string') throw new RelayConfigError('RELAY_SITES', `${where}: each origin must be a string like "https://shop.example.com"`);
  const wildcard = origin.includes('://*.');
  const probe = wildcard ? origin.replace('://*.', '://wildcard.') : origin;
  let url: URL;
  try {
    url = new URL(probe);
  } catch {
    throw new RelayConfigError('RELAY_SITES', `${where}: ${JSON.stringify(origin)} is not an origin like "https://shop.example.com"`);
  }
  if (url.origin !== probe.replace(/\/$/, '') || !/^https?:$/.test(url.protocol)) {
    throw new RelayConfigError('RELAY_SITES', `${where}: ${JSON.stringify(origin)} must be scheme://host[:port] with no path`);
  }
  return wildcard ? url.origin.replace('://wildcard.', '://*.') : url.origin;
}

function idList(value: unknown, where: string, check: (id: string) => boolean, what: string): ReadonlySet<string> | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((id) => typeof id === 'string' && check(id))) {
    throw new RelayConfigError('RELAY_SITES', `${where} must be an array of ${what}`);
  }
  return new Set(value as string[]);
}

/**
 * What one visitor may send: the snippet posts at most once per flush interval (1 s) plus a beacon
 * on page hide, and a page that tracks in a burst still needs only a few requests; 10/s with a
 * burst of 50 leaves wide headroom for several tabs behind one address (an office, a NAT).
 */
export const DEFAULT_VISITOR_RATE: Rate = { perSecond: 10, burst: 50 };

function parseRate(raw: unknown, fallback: Rate | undefined, where: string): Rate {
  if (raw === undefined && fallback) return fallback;
  const rate = isRecord(raw) ? raw : {};
  const perSecond = rate['per_second'];
  const burst = rate['burst'] ?? (typeof perSecond === 'number' ? Math.max(1, Math.ceil(perSecond)) : undefined);
  if (typeof perSecond !== 'number' || !(perSecond > 0) || typeof burst !== 'number' || !(burst >= 1)) {
    throw new RelayConfigError('RELAY_SITES', `${where} must be {"per_second": >0, "burst": ≥1}`);
  }
  return { perSecond, burst };
}

function parseSite(raw: unknown, index: number): SiteConfig {
  const where = `site ${index}`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new RelayConfigError('RELAY_SITES', `${where} must be an object {"key","origins",…}`);
  const site = raw as Record<string, unknown>;
  const key = site['key'];
  if (typeof key !== 'string' || !/^[A-Za-z0-9_.-]{1,128}$/.test(key))
    throw new RelayConfigError('RELAY_SITES', `${where}: key must be 1–128 letters, digits, "_", "." or "-"`);
  const origins = site['origins'] ?? [];
  if (!Array.isArray(origins)) throw new RelayConfigError('RELAY_SITES', `${where} (${key}): origins must be an array`);
  const verify = site['verify'] ?? 'optional';
  if (!VERIFY.includes(verify as Verify))
    throw new RelayConfigError('RELAY_SITES', `${where} (${key}): verify must be "off", "open", "optional" or "required"`);
  const mergeBy = site['merge_by'] ?? [...DEFAULT_PERSON_MERGE_BY];
  if (!Array.isArray(mergeBy) || mergeBy.length < 1 || mergeBy.length > 3 || !mergeBy.every((id) => parseFieldId(id)?.kind === 'person')) {
    throw new RelayConfigError('RELAY_SITES', `${where} (${key}): merge_by must be 1 to 3 person field IDs`);
  }
  const visitorRateLimit = parseRate(site['visitor_rate_limit'], DEFAULT_VISITOR_RATE, `${where} (${key}): visitor_rate_limit`);
  const rateLimit = site['rate_limit'] === undefined ? undefined : parseRate(site['rate_limit'], undefined, `${where} (${key}): rate_limit`);
  return {
    key,
    name: typeof site['name'] === 'string' ? site['name'] : key,
    origins: origins.map((origin, i) => normaliseOrigin(origin, `${where} (${key}) origins[${i}]`)),
    allowNoOrigin: site['allow_no_origin'] === true,
    activities: idList(
      site['activities'],
      `${where} (${key}): activities`,
      (id) => parseFieldId(id)?.kind === 'activity',
      'activity IDs like "act:cm:signed-up"',
    ),
    fields: idList(site['fields'], `${where} (${key}): fields`, (id) => parseFieldId(id)?.kind === 'person', 'person field IDs like "str::email"'),
    verify: verify as Verify,
    subscribeUnverified: site['subscribe_unverified'] === true,
    mergeBy: mergeBy as string[],
    visitorRateLimit,
    rateLimit,
  };
}

/** Parses `RELAY_SITES` (a JSON array). */
export function parseSites(json: string | undefined): Map<string, SiteConfig> {
  const sites = new Map<string, SiteConfig>();
  if (json === undefined) return sites;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (cause) {
    throw new RelayConfigError('RELAY_SITES', `is not valid JSON (${(cause as Error).message}); expected [{"key":"pk_…","origins":["https://…"]}]`, { cause });
  }
  if (!Array.isArray(raw)) throw new RelayConfigError('RELAY_SITES', 'must be a JSON array of sites');
  raw.forEach((entry, index) => {
    const site = parseSite(entry, index);
    if (sites.has(site.key)) throw new RelayConfigError('RELAY_SITES', `key ${JSON.stringify(site.key)} appears twice`);
    sites.set(site.key, site);
  });
  return sites;
}

/**
 * `RELAY_PLAN`: the tracking plan's JSON (a Worker's JSON var arrives parsed; the Node relay has
 * already put the file's text here). Its sites' allowlists replace those of `RELAY_SITES` for the
 * same key, and give the relay the plan's attribute types; plan sites without a RELAY_SITES entry
 * are left out (the plan says what a site may send, RELAY_SITES where it may send from).
 */
export function applyPlan(sites: Map<string, SiteConfig>, raw: unknown): void {
  if (raw === undefined || raw === null || raw === '') return;
  if (typeof raw === 'string' && !raw.trim().startsWith('{')) {
    throw new RelayConfigError(
      'RELAY_PLAN',
      "must be the plan's JSON here (the Node relay reads a file path itself; on Workers use a JSON var or a bundled import)",
    );
  }
  let plan: Plan;
  try {
    plan = parsePlan(raw, 'RELAY_PLAN');
  } catch (cause) {
    if (cause instanceof PlanError) throw new RelayConfigError('RELAY_PLAN', cause.message.replace(/^RELAY_PLAN /, ''), { cause });
    throw cause;
  }
  const rules = activityRules(plan);
  for (const entry of plan.sites ?? []) {
    const site = sites.get(entry.key);
    if (!site) continue;
    sites.set(entry.key, { ...site, activities: new Set(entry.activities), fields: new Set(entry.fields), attributeRules: rules });
  }
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
    ambiguous: ambiguousPolicy(env),
    outboxLimits: outboxLimits(env),
    logLevel: logLevel(env),
    identityTtlSeconds: 3600,
  };
}
