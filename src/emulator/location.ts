/**
 * A person's location from a request's `location` object: custom data, `source_ip`
 * (through the injected geolocation) and postal-address lookup (a paid, business-plan feature).
 * @module
 */
import type { Location } from '../api/index.js';
import type { GeoPoint, ResolvedOptions } from './options.js';
import type { Store } from './store.js';
import type { PersonLocation } from './records.js';

/** Offline stand-in for the address lookup service: a few cities, found by name in the address. */
const CITIES: Array<Required<GeoPoint>> = [
  { city_name: 'Paris', region_name: 'Île-de-France', country_name: 'France', lat: 48.8566, lng: 2.3522 },
  { city_name: 'London', region_name: 'England', country_name: 'United Kingdom', lat: 51.5074, lng: -0.1278 },
  { city_name: 'Berlin', region_name: 'Berlin', country_name: 'Germany', lat: 52.52, lng: 13.405 },
  { city_name: 'Sydney', region_name: 'New South Wales', country_name: 'Australia', lat: -33.8688, lng: 151.2093 },
  { city_name: 'Melbourne', region_name: 'Victoria', country_name: 'Australia', lat: -37.8136, lng: 144.9631 },
  { city_name: 'New York', region_name: 'New York', country_name: 'United States', lat: 40.7128, lng: -74.006 },
  { city_name: 'San Francisco', region_name: 'California', country_name: 'United States', lat: 37.7749, lng: -122.4194 },
  { city_name: 'Tokyo', region_name: 'Tokyo', country_name: 'Japan', lat: 35.6762, lng: 139.6503 },
];

export const ADDRESS_LOOKUP_REFUSED = 'Address lookup needs the business plan or higher; send custom location data or source_ip instead';

const defined = <T extends object>(value: T): { [K in keyof T]: Exclude<T[K], undefined> } =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as { [K in keyof T]: Exclude<T[K], undefined> };

/** A place name the offline geocoder knows, for proximity on people located by city name only. */
export function cityPoint(name: string | undefined): Required<GeoPoint> | undefined {
  if (!name) return undefined;
  const lower = name.toLowerCase();
  return CITIES.find((city) => city.city_name.toLowerCase() === lower);
}

/**
 * Works out the person's location; `undefined` when nothing changes. Returns an error sentence
 * (and changes nothing) when an address lookup is refused on this plan.
 */
export function resolveLocation(
  store: Store,
  options: ResolvedOptions,
  current: PersonLocation | null,
  location: Location | undefined,
): { ok: true; value: PersonLocation | null } | { ok: false; error: string } {
  if (!location) return { ok: true, value: current };
  let next: PersonLocation | null = current;
  if (location.source_ip) {
    const point = options.geolocate(location.source_ip);
    const ip = defined({ address: location.source_ip, ...point });
    next = next ? { ...next, ip } : defined({ source: 'ip' as const, ...point, ip });
  }
  if (location.custom) {
    // Custom data is more specific than an IP (location rule 2): it becomes the location; the IP stays beside it.
    const known = cityPoint(location.custom.city_name);
    const custom = defined({ ...location.custom });
    next = defined({ source: 'custom' as const, lat: known?.lat, lng: known?.lng, ...custom, ip: next?.ip });
  }
  if (location.address) {
    if (options.plan !== 'business') return { ok: false, error: ADDRESS_LOOKUP_REFUSED };
    store.addressLookups++;
    const address = location.address;
    const city = CITIES.find((c) => address.address.toLowerCase().includes(c.city_name.toLowerCase()));
    // postal_code and country filter: a match outside them is ignored (location rule 3).
    const inCountry = !address.country || (city && city.country_name.toLowerCase() === address.country.toLowerCase());
    if (city && inCountry) next = defined({ source: 'address' as const, position_name: address.address, ...city, ip: next?.ip });
  }
  return { ok: true, value: next };
}
