/**
 * `activities/create`: 1–100 events. Each finds or creates its person (from `fields`, or an
 * existing `person_id`), applies the location, checks its attributes against the definition,
 * moves an `awaiting_implementation` definition to `live`, and joins the person's history
 * (which the `$act::*` filters read). At most 50 events per activity per person in 24 h.
 * @module
 */
import {
  DEFAULT_PERSON_MERGE_BY,
  LIMITS,
  checkFieldValue,
  jsonBytes,
  scaleInt,
  parseFieldId,
  type ActivityResult,
  type Location,
  type ResponseMap,
} from '../api/index.js';
import { fail } from './errors.js';
import { resolveLocation } from './location.js';
import type { ResolvedOptions } from './options.js';
import { mergeOne } from './people/merge.js';
import { personValue } from './people/view.js';
import type { Store } from './store.js';
import type { Person } from './records.js';

const DAY_MS = 86_400_000;
/** The dashboard shows the latest events; older ones stay in each person's history. */
const RECENT_EVENTS = 200;

interface EventInput {
  activity_id: string;
  fields?: Record<string, unknown>;
  person_id?: string;
  attributes?: Record<string, unknown>;
  location?: Location;
  created?: string | number;
}

/** `created` as ISO: an ISO string, or epoch seconds/milliseconds. */
function eventTime(created: string | number | undefined, now: number): string {
  if (typeof created === 'string') return new Date(Date.parse(created)).toISOString();
  if (typeof created === 'number') return new Date(created < 1e12 ? created * 1000 : created).toISOString();
  return new Date(now).toISOString();
}

type Outcome = { ok: true; person: Person } | { ok: false; error: string };

function personFor(store: Store, options: ResolvedOptions, event: EventInput, mergeBy: readonly string[]): Outcome {
  if (event.person_id !== undefined) {
    const person = store.people.get(event.person_id);
    if (!person) return { ok: false, error: `No person has ID ${JSON.stringify(event.person_id)}` };
    if (person.archived) return { ok: false, error: `Person ${person.id} is archived; restore it first` };
    const location = resolveLocation(store, options, person.location, event.location);
    if (!location.ok) return location;
    person.location = location.value;
    return { ok: true, person };
  }
  const merged = mergeOne(
    store,
    options,
    { fields: event.fields ?? {}, ...(event.location ? { location: event.location } : {}) },
    { rules: { mergeBy, alt: {}, findStrategy: 0 }, strategy: 2, skipNonExisting: false },
  );
  return merged.person ? { ok: true, person: merged.person } : { ok: false, error: merged.error ?? 'the person could not be merged' };
}

export function activitiesCreate(store: Store, options: ResolvedOptions, body: Record<string, unknown>): ResponseMap['activities/create'] {
  const mergeBy = (body['merge_by'] as string[] | undefined) ?? DEFAULT_PERSON_MERGE_BY;
  const now = store.now();
  let changed = false;
  const results = (body['activities'] as EventInput[]).map((event): ActivityResult => {
    const invalid = (error: string): ActivityResult => ({ status: 'invalid', error });
    if (jsonBytes(event) > LIMITS.activityBytes) return invalid(`an activity is at most ${LIMITS.activityBytes / 1024} kB`);
    const definition = store.activities.get(event.activity_id);
    if (!definition) return invalid(`No activity definition has field ID ${event.activity_id}; create it with definitions/activity/create first`);
    if (definition.state === 'archived') return invalid(`Activity ${event.activity_id} is archived and takes no more events`);
    const attributes: Record<string, unknown> = {};
    for (const [id, value] of Object.entries(event.attributes ?? {})) {
      const attribute = definition.attributes.find((a) => a.field_id === id);
      if (!attribute)
        return invalid(
          `${id} is not an attribute of ${event.activity_id} (its attributes: ${definition.attributes.map((a) => a.field_id).join(', ') || 'none'})`,
        );
      const checked = checkFieldValue(id, value);
      if (!checked.ok) return invalid(checked.error);
      attributes[id] = parseFieldId(id)?.type === 'int' && typeof checked.value === 'number' ? scaleInt(checked.value) : checked.value;
    }
    const found = personFor(store, options, event, mergeBy);
    if (!found.ok) return invalid(found.error);
    const person = found.person;
    changed = true;
    const recent = person.events.filter((e) => e.activity_id === event.activity_id && e.received > now - DAY_MS).length;
    if (recent >= LIMITS.eventsPerActivityPerPersonPerDay) {
      return invalid(
        `Person ${person.id} already has ${LIMITS.eventsPerActivityPerPersonPerDay} ${event.activity_id} events in the last 24 hours, the most allowed`,
      );
    }
    for (const attribute of definition.attributes) {
      if (attribute.cdp_field_id && attributes[attribute.field_id] === undefined) {
        const value = personValue(store, person, attribute.cdp_field_id);
        if (value !== undefined && value !== null) attributes[attribute.field_id] = value;
      }
    }
    const record = { activity_id: event.activity_id, person_id: person.id, attributes, created: eventTime(event.created, now), received: now };
    person.events.push(record);
    person.updated_at = new Date(now).toISOString();
    store.recentEvents.push(record);
    if (store.recentEvents.length > RECENT_EVENTS) store.recentEvents.splice(0, store.recentEvents.length - RECENT_EVENTS);
    if (definition.state === 'awaiting_implementation') definition.state = 'live';
    // recorded: the entry carries person_id only when the request named the person by ID
    return event.person_id !== undefined ? { person_id: person.id, status: 'queued', person_status: 'queued' } : { status: 'queued', person_status: 'queued' };
  });
  if (changed) store.touch();
  if (results.every((r) => r.status === 'invalid')) {
    fail(
      results.length === 1 ? `The activity was not recorded: ${results[0]!.error}` : `None of the ${results.length} activities were recorded`,
      400,
      results.map((r) => ({ status: 'invalid', error: r.error ?? '' })),
    );
  }
  return { activities: results };
}
