/**
 * `RELAY_SITES` (where each site may send from, what it may send, how fast) and `RELAY_PLAN` (the
 * tracking plan, which narrows what a site may send), read into one `SiteConfig` per site. Every
 * error names the variable.
 * @module
 */
import { DEFAULT_PERSON_MERGE_BY, isRecord, parseFieldId } from '../../api/index.js';
import { activityRules, type ActivityRules } from '../../plan/rules.js';
import { type Plan, parsePlan, PlanError } from '../../plan/schema.js';
import type { SourceIp } from './client-ip.js';
import { RelayConfigError } from './errors.js';
import type { Rate } from './limits.js';

/** What an unproven browser may write (docs/security.md): `required` nothing, `optional` create people, `open` also add events to anyone it names, `off` anything. */
export type Verify = 'off' | 'open' | 'optional' | 'required';

/**
 * Whether an outbox entry of `kind` for a site of `verify` proves its person: only a verified
 * identify becomes a `merge` (strategy 2) unless the site trusts its browsers (`off`), and only
 * verified tracks are forwarded unless the site is `open` or `off`. A site no longer configured
 * proves nothing.
 */
export function provesPerson(verify: Verify | undefined, kind: 'merge' | 'merge-create' | 'activity'): boolean {
  if (verify === undefined || verify === 'off' || kind === 'merge-create') return false;
  return kind === 'merge' || verify !== 'open';
}

/**
 * Items of the server door (`POST /server/collect`) are kept as those of a site of their own per
 * relay token, keyed `server:<token name>`: no `RELAY_SITES` key has a colon, so a browser can never
 * send as one, and the ids of one token's servers (every instance, every retry) are remembered
 * together, apart from other tokens' and from the browsers'.
 */
export const SERVER_SITE_PREFIX = 'server:';

/** Whether outbox entries of site `key` came through the server door: their server vouches for every person they name. */
export const isServerSite = (key: string): boolean => key.startsWith(SERVER_SITE_PREFIX);

/**
 * Whether an outbox entry proves its person: every entry of the server door (its token's holder
 * vouches for whom it names), else as {@link provesPerson} says for its site.
 */
export const entryProves = (sites: ReadonlyMap<string, SiteConfig>, entry: { site: string; kind: 'merge' | 'merge-create' | 'activity' }): boolean =>
  isServerSite(entry.site) || provesPerson(sites.get(entry.site)?.verify, entry.kind);

/** The site the server door keeps token `name`'s items under: no origins or allowlists (a server sends what it means to), the default `merge_by`. */
export function serverSite(name: string): SiteConfig {
  const key = `${SERVER_SITE_PREFIX}${name}`;
  return {
    key,
    name: key,
    origins: [],
    allowNoOrigin: true,
    activities: undefined,
    fields: undefined,
    verify: 'off',
    mergeBy: [...DEFAULT_PERSON_MERGE_BY],
    visitorRateLimit: DEFAULT_VISITOR_RATE,
    rateLimit: undefined,
  };
}

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
  /** `visitor_rate_limit`: a token bucket per visitor (client address), whose requests may wait `queue_ms` for a token @default {perSecond: 10, burst: 50, queueMs: 1000} */
  visitorRateLimit: Rate;
  /** `rate_limit`: an explicit cap on the whole site's requests, across all its visitors @default none */
  rateLimit: Rate | undefined;
  /** from `RELAY_PLAN`: per activity, the attributes a browser may send, their types, which are required @default none (no plan) */
  attributeRules?: ActivityRules | undefined;
  /** `source_ip`: the visitor's address sent to the platform in full, truncated (IPv4 /24, IPv6 /48) or not at all @default 'full' */
  sourceIp?: SourceIp | undefined;
}

const VERIFY: readonly Verify[] = ['off', 'open', 'optional', 'required'];
const SOURCE_IP: readonly SourceIp[] = ['full', 'truncated', 'none'];

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
export const DEFAULT_VISITOR_RATE: Rate = { perSecond: 10, burst: 50, queueMs: 1_000 };
/**
 * The longest a visitor's request may wait for its token (`queue_ms`, core/limits.ts `Rate.queueMs`):
 * a queue of up to `per_second` requests by default, so a visitor just over its rate (many tabs,
 * a backfill) is slowed to it rather than refused and left to back off. Waiting requests hold no
 * lock, gate or room, only their connection and read body.
 */
const MAX_VISITOR_QUEUE_MS = 10_000;

function parseRate(raw: unknown, fallback: Rate | undefined, where: string): Rate {
  if (raw === undefined && fallback) return fallback;
  const rate = isRecord(raw) ? raw : {};
  const perSecond = rate['per_second'];
  const burst = rate['burst'] ?? (typeof perSecond === 'number' ? Math.max(1, Math.ceil(perSecond)) : undefined);
  if (typeof perSecond !== 'number' || !(perSecond > 0) || typeof burst !== 'number' || !(burst >= 1)) {
    throw new RelayConfigError('RELAY_SITES', `${where} must be {"per_second": >0, "burst": ≥1${fallback ? ', "queue_ms": 0–10000' : ''}}`);
  }
  if (!fallback) {
    if (rate['queue_ms'] !== undefined) throw new RelayConfigError('RELAY_SITES', `${where} takes no queue_ms: a site's cap refuses at once`);
    return { perSecond, burst };
  }
  const queueMs = rate['queue_ms'] ?? fallback.queueMs ?? 0;
  if (typeof queueMs !== 'number' || !Number.isInteger(queueMs) || queueMs < 0 || queueMs > MAX_VISITOR_QUEUE_MS) {
    throw new RelayConfigError('RELAY_SITES', `${where}: queue_ms must be a whole number of ms from 0 (no waiting) to ${MAX_VISITOR_QUEUE_MS}`);
  }
  return { perSecond, burst, queueMs };
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
  const sourceIp = site['source_ip'] ?? 'full';
  if (!SOURCE_IP.includes(sourceIp as SourceIp))
    throw new RelayConfigError('RELAY_SITES', `${where} (${key}): source_ip must be "full", "truncated" or "none"`);
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
    sourceIp: sourceIp as SourceIp,
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
