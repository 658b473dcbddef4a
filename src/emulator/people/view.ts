/**
 * How a person reads from outside: field values (with `tags`, `u4s::t`, `str::person_id`
 * and the permission defaults), the projection of `fields`, and the filter environment.
 * @module
 */
import type { FilterEnv } from '../filter/index.js';
import { cityPoint } from '../location.js';
import type { Store } from '../store.js';
import type { Person } from '../records.js';

const GEO_FROM_LOCATION: Record<string, 'city_name' | 'region_name' | 'country_name'> = {
  'geo::city': 'city_name',
  'geo::region': 'region_name',
  'geo::country': 'country_name',
};

/** The value of `fieldId` on `person`, as retrieval and filters see it; undefined when empty. */
export function personValue(store: Store, person: Person, fieldId: string): unknown {
  switch (fieldId) {
    case 'tags':
      return store.tagNames(person.tags);
    case 'u4s::t':
      return person.tags;
    case 'str::person_id':
      return person.id;
    case 'bol::p':
      // email permission defaults to true, SMS permission to false (spec)
      return person.fields[fieldId] ?? true;
    case 'bol::sp':
      return person.fields[fieldId] ?? false;
  }
  const value = person.fields[fieldId];
  if (value === undefined && GEO_FROM_LOCATION[fieldId] && person.location) {
    const name = person.location[GEO_FROM_LOCATION[fieldId]];
    return name ? { name } : undefined;
  }
  return value;
}

/**
 * The `fields` object of a retrieved person: the requested field IDs (empty ones as `null`),
 * or every field it holds when none were requested — our choice, the spec shows only requests with `fields`.
 */
export function projectPerson(store: Store, person: Person, fields: readonly string[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (fields === undefined) {
    for (const [id, value] of Object.entries(person.fields)) out[id] = value;
    if (person.tags.length > 0) out['tags'] = store.tagNames(person.tags);
    return out;
  }
  for (const id of fields) out[id] = personValue(store, person, id) ?? null;
  return out;
}

/** The point a person is at: the IP's when known (location rule 4), else custom data or the geocoded city. */
export function personPoint(person: Person): { lat: number; lng: number } | undefined {
  const location = person.location;
  if (!location) return undefined;
  if (location.ip?.lat !== undefined && location.ip.lng !== undefined) return { lat: location.ip.lat, lng: location.ip.lng };
  if (location.lat !== undefined && location.lng !== undefined) return { lat: location.lat, lng: location.lng };
  const city = cityPoint(location.city_name);
  return city ? { lat: city.lat, lng: city.lng } : undefined;
}

export function personEnv(store: Store): FilterEnv<Person> {
  return {
    id: (person) => person.id,
    value: (person, fieldId) => personValue(store, person, fieldId),
    point: personPoint,
    membership: (person, audienceId) => person.audiences[audienceId],
    events: (person, activityId) => person.events.filter((event) => event.activity_id === activityId),
    now: store.now,
  };
}
