/**
 * Adds what only the server knows to an item's location: the visitor's address as
 * `source_ip` (a browser-sent one is dropped) as much of it as the site lets go, Cloudflare's
 * geolocation as `custom` when the item has none, and `address` only when lookup is on and the
 * month's budget allows.
 * @module
 */
import { type SourceIp, shownAddress } from '../core/client-ip.js';

/** What the runtime knows about the connection (the entries fill it in). */
export interface ClientInfo {
  ip?: string | undefined;
  /** Workers' `request.cf` */
  cf?: CfGeo | undefined;
}

/** The members of `request.cf` the relay reads. */
export interface CfGeo {
  country?: string;
  region?: string;
  city?: string;
  latitude?: string | number;
  longitude?: string | number;
}

let regionNames: Intl.DisplayNames | undefined | null;
/** `FR` → `France` where the runtime has ICU data; the code itself otherwise. */
function countryName(code: string): string {
  if (regionNames === undefined) {
    try {
      regionNames = new Intl.DisplayNames(['en'], { type: 'region' });
    } catch {
      regionNames = null;
    }
  }
  try {
    return regionNames?.of(code) ?? code;
  } catch {
    return code;
  }
}

/** `location.custom` from `request.cf` (with its point, `lat`/`lng`, when `point`); undefined when it holds nothing useful. */
export function cfCustom(cf: CfGeo | undefined, point = true): Record<string, unknown> | undefined {
  if (!cf) return undefined;
  const custom: Record<string, unknown> = {};
  if (typeof cf.country === 'string' && /^[A-Z]{2}$/.test(cf.country) && cf.country !== 'XX' && cf.country !== 'T1')
    custom['country_name'] = countryName(cf.country);
  if (typeof cf.region === 'string' && cf.region) custom['region_name'] = cf.region.slice(0, 255);
  if (typeof cf.city === 'string' && cf.city) custom['city_name'] = cf.city.slice(0, 255);
  const lat = Number(cf.latitude);
  const lng = Number(cf.longitude);
  if (
    point &&
    cf.latitude !== undefined &&
    cf.longitude !== undefined &&
    Number.isFinite(lat) &&
    Number.isFinite(lng) &&
    Math.abs(lat) <= 90 &&
    Math.abs(lng) <= 180
  ) {
    custom['lat'] = lat;
    custom['lng'] = lng;
  }
  return Object.keys(custom).length > 0 ? custom : undefined;
}

/** What one request adds to every item's location: computed once, applied per item. */
export interface Enrichment {
  ip: string | undefined;
  custom: Record<string, unknown> | undefined;
  keepAddress: boolean;
  /** keep the item's own `source_ip`: the server door's server tells its visitor's address @default false (a browser's is dropped) */
  keepSourceIp?: boolean;
}

/**
 * The request's {@link Enrichment}: the visitor's address as the site's `sourceIp` lets it go,
 * `request.cf` as `custom` (nothing of it under `none`, no point under `truncated`: both come from
 * the whole address), the lookup switch.
 */
export const enrichmentOf = (info: ClientInfo, keepAddress: boolean, sourceIp: SourceIp = 'full'): Enrichment => ({
  ip: shownAddress(info.ip, sourceIp),
  custom: sourceIp === 'none' ? undefined : cfCustom(info.cf, sourceIp === 'full'),
  keepAddress,
});

/**
 * The location to forward: the item's own minus `source_ip` (unless its server tells it) and minus
 * `address` unless lookup is on, plus the visitor's address and Cloudflare's `custom` when it has none.
 */
export function enrichLocation(location: Record<string, unknown> | undefined, enrichment: Enrichment): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = { ...location };
  if (!enrichment.keepSourceIp) delete out['source_ip'];
  if (!enrichment.keepAddress) delete out['address'];
  if (enrichment.ip) out['source_ip'] = enrichment.ip;
  if (out['custom'] === undefined && enrichment.custom) out['custom'] = { ...enrichment.custom };
  return Object.keys(out).length > 0 ? out : undefined;
}

/** True when the item asks for an address lookup. */
export const wantsAddress = (location: Record<string, unknown> | undefined): boolean =>
  typeof location?.['address'] === 'object' && location['address'] !== null;
