/**
 * `person/merge`: creates or updates up to 100 people, per the spec's rules (merge_by and its
 * alternates, merge/find strategies, skip_non_existing, clear_fields, tags, suppression list,
 * location). Results come back per person in input order; when all fail the call is a 400.
 * @module
 */
import { DEFAULT_PERSON_MERGE_BY, READ_ONLY_PERSON_FIELDS, type Location, type PersonMergeResult, type ResponseMap } from '../../api/index.js';
import { fail } from '../errors.js';
import { checkRecordFields, isMultiSelect } from '../fields.js';
import { resolveLocation } from '../location.js';
import type { ResolvedOptions } from '../options.js';
import type { Store } from '../store.js';
import type { Person } from '../records.js';
import { applyFields, type MergeStrategy } from '../write.js';
import { findPerson, suppliedKeys, type FindRules } from './find.js';

export interface MergeInput {
  fields?: unknown;
  location?: Location;
  tags?: string[];
  unset_tags?: string[];
  clear_fields?: Record<string, boolean>;
}

export interface MergeSettings {
  rules: FindRules;
  strategy: MergeStrategy;
  skipNonExisting: boolean;
  suppressionField?: string | undefined;
}

/** An email unsubscribe records its context message; the platform's default is "Unsubscribed via API". */
function noteUnsubscribe(store: Store, person: Person, wasSubscribed: boolean, fields: Record<string, unknown>): void {
  if (wasSubscribed && person.fields['bol::p'] === false && fields['str::u-ctx'] === undefined)
    store.setPersonField(person, 'str::u-ctx', 'Unsubscribed via API');
}

/** Merges one person; the shared step of `person/merge` and of `activities/create`. */
export function mergeOne(store: Store, options: ResolvedOptions, input: MergeInput, settings: MergeSettings): PersonMergeResult & { person?: Person } {
  const checked = checkRecordFields(store, 'person', input.fields ?? {});
  if (!checked.ok) return { status: 'invalid', error: checked.error };
  const fields = checked.value;
  const { rules } = settings;
  if (suppliedKeys(rules, fields).length === 0) {
    const names = rules.mergeBy.join(' or ');
    return {
      status: 'invalid',
      error:
        rules.mergeBy === DEFAULT_PERSON_MERGE_BY
          ? 'fields must include str::email or str::ei to identify the person'
          : `fields must include a merge_by field (${names})`,
    };
  }
  const existing = findPerson(store, rules, fields);
  for (const id of READ_ONLY_PERSON_FIELDS) delete fields[id];
  if (existing?.archived) return { status: 'invalid', error: `Person ${existing.id} is archived and takes no updates; restore it first` };
  if (!existing) {
    if (settings.skipNonExisting) return { status: 'invalid', error: 'No existing person matched and skip_non_existing is true, so none was created' };
    if (rules.mergeBy.includes('str::person_id'))
      return { status: 'invalid', error: `No person has ID ${JSON.stringify((input.fields as Record<string, unknown>)['str::person_id'])}` };
    if (settings.suppressionField) {
      const email = fields[settings.suppressionField];
      if (typeof email === 'string' && store.suppressed.has(email.trim().toLowerCase())) return { status: 'suppressed', error: 'Email is suppressed' };
    }
  }
  const location = resolveLocation(store, options, existing?.location ?? null, input.location);
  if (!location.ok) return { status: 'invalid', error: location.error };
  if (!existing) {
    const person = store.createPerson();
    if (fields['bol::p'] === undefined || fields['bol::p'] === null) fields['bol::p'] = true;
    for (const [id, value] of Object.entries(fields)) store.setPersonField(person, id, value);
    noteUnsubscribe(store, person, true, fields);
    person.location = location.value;
    store.applyTags(person, '', input.tags, input.unset_tags);
    return { person_id: person.id, status: 'created', person };
  }
  if (settings.strategy !== 3) {
    const wasSubscribed = existing.fields['bol::p'] !== false;
    applyFields(
      existing.fields,
      fields,
      settings.strategy,
      input.clear_fields,
      (id, value) => store.setPersonField(existing, id, value),
      (id) => isMultiSelect(store, 'person', id),
    );
    noteUnsubscribe(store, existing, wasSubscribed, fields);
    existing.location = location.value;
    store.applyTags(existing, '', input.tags, input.unset_tags);
    existing.updated_at = store.nowIso();
  }
  return { person_id: existing.id, status: 'merged', person: existing };
}

/** Reads the find rules and strategy of a merge body (defaults: unique identifiers, strategy 2, find 0). */
export function mergeSettings(body: Record<string, unknown>): MergeSettings {
  const mergeBy: readonly string[] = (body['merge_by'] as string[] | undefined) ?? DEFAULT_PERSON_MERGE_BY;
  const strategy = (body['merge_strategy'] as MergeStrategy | undefined) ?? 2;
  const skipNonExisting = body['skip_non_existing'] === true;
  if (mergeBy.includes('str::person_id') && !(strategy === 2 && skipNonExisting)) {
    // The spec: a read-only merge key requires merge_strategy 2 together with skip_non_existing.
    fail('merge_by str::person_id is read-only: send merge_strategy 2 (or leave it out) with skip_non_existing: true');
  }
  return {
    rules: {
      mergeBy,
      alt: (body['merge_by_alt_fields'] as Record<string, string[]> | undefined) ?? {},
      findStrategy: (body['find_strategy'] as 0 | 1 | 2 | undefined) ?? 0,
    },
    strategy,
    skipNonExisting,
    suppressionField: body['suppression_list_field_id'] as string | undefined,
  };
}

/**
 * The whole call. `async: true` is processed at once too (the emulator has no queue), but
 * answers the way the platform confirms a queued ingestion: `{status: 'queued', queued: N}`
 * — the recorded shape is not public; this is our choice.
 */
export function personMerge(store: Store, options: ResolvedOptions, body: Record<string, unknown>): ResponseMap['person/merge'] {
  const settings = mergeSettings(body);
  const people = body['people'] as MergeInput[];
  const results: PersonMergeResult[] = people.map((input) => {
    const { person: _person, ...result } = mergeOne(store, options, input, settings);
    return result;
  });
  if (results.some((r) => r.status === 'created' || r.status === 'merged')) store.touch();
  if (body['async'] === true) return { status: 'queued', queued: people.length };
  if (results.every((r) => r.status === 'invalid' || r.status === 'suppressed')) {
    fail(
      results.length === 1 ? `The person was not merged: ${results[0]!.error}` : `None of the ${results.length} people were merged`,
      400,
      results.map((r) => ({ status: r.status, error: r.error ?? '' })),
    );
  }
  return { people: results };
}
