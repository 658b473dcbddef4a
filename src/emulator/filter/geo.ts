/**
 * `$geo::is|is_not` on geo fields (by name, ignoring case; the person's located city,
 * region or country stands in when the field itself is empty) and the proximity operators.
 * Proximity payload (not shown by the spec; ours): `{field_id, value: {lat, lng, radius, unit?: 'km'|'mi'}}`.
 */
import type { OperatorBuilder } from './types.js';
import { badValue, fieldOf, stringList, text } from './util.js';

const EARTH_KM = 6371;

/** Great-circle distance in km. */
export function distanceKm(a: { lat: number; lng: number }, b: { lat: number; lng: number }): number {
  const rad = Math.PI / 180;
  const dLat = (b.lat - a.lat) * rad;
  const dLng = (b.lng - a.lng) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(dLng / 2) ** 2;
  return 2 * EARTH_KM * Math.asin(Math.min(1, Math.sqrt(h)));
}

const proximity =
  (inside: boolean): OperatorBuilder =>
  (c, env, op) => {
    fieldOf(c, op);
    const v = c.value as { lat?: unknown; lng?: unknown; radius?: unknown; unit?: unknown } | undefined;
    if (
      !v ||
      typeof v.lat !== 'number' ||
      typeof v.lng !== 'number' ||
      typeof v.radius !== 'number' ||
      v.radius < 0 ||
      (v.unit !== undefined && v.unit !== 'km' && v.unit !== 'mi')
    ) {
      badValue(op, '{"lat": number, "lng": number, "radius": number, "unit": "km"|"mi"}');
    }
    const center = { lat: v.lat, lng: v.lng };
    const radiusKm = v.unit === 'mi' ? v.radius * 1.609344 : v.radius;
    return (r) => {
      const point = env.point?.(r);
      return point !== undefined && distanceKm(point, center) <= radiusKm === inside;
    };
  };

export const GEO_OPERATORS: Record<string, OperatorBuilder> = {
  '$geo::is': (c, env, op) => {
    const field = fieldOf(c, op);
    const wanted = new Set(stringList(c.value, op));
    return (r) => {
      const name = text(env.value(r, field))?.toLowerCase();
      return name !== undefined && wanted.has(name);
    };
  },
  '$geo::is_not': (c, env, op) => {
    const field = fieldOf(c, op);
    const unwanted = new Set(stringList(c.value, op));
    return (r) => {
      const name = text(env.value(r, field))?.toLowerCase();
      return name === undefined || !unwanted.has(name);
    };
  },
  $proximity_is_within: proximity(true),
  $proximity_is_not_within: proximity(false),
};
