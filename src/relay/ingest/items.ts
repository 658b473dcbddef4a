/**
 * One /collect item, checked on its own: a bad item becomes `rejected` with a reason and
 * the good items of the same request still go. Checks the envelope (valibot), the site's
 * allow-lists, then the platform entry it becomes (the spec's own schemas from src/api).
 * @module
 */
import * as v from 'valibot';
import { forbiddenKey, jsonBytes, LIMITS, parseFieldId, toIssues } from '../../api/index.js';
import { mergedPerson } from '../../api/schemas/people.js';
import { activityEvent } from '../../api/schemas/definitions.js';
import { attributesProblem } from '../../plan/rules.js';
import type { SiteConfig } from '../core/sites.js';
import { clipId, isRecord } from '../../api/objects.js';
import { anyObject, fieldProblems, location } from '../../api/schemas/common.js';
import { COLLECT_LIMITS } from '../../api/collect.js';

/**
 * An object of any keys and values, taken as it is ({@link checkItem} has refused prototype-named
 * keys already: `forbiddenKey`). Its keys and values are checked where they become the platform
 * entry ({@link checkEntry}).
 */
const record = (what: string) => anyObject(`${what} must be an object, not an array or a value`);

/** How deep an item may nest: far more than any item needs. */
const MAX_ITEM_DEPTH = 16;

/** The longest `activity_id` an item may carry. */
const ACTIVITY_ID_CHARS = 128;
/** One `user_hash`: an HMAC-SHA256 in hex. */
const HEX64 = /^[0-9a-fA-F]{64}$/;

const base = {
  id: v.pipe(
    v.string('id must be a string'),
    v.minLength(1, 'id must not be empty'),
    v.maxLength(COLLECT_LIMITS.idChars, `id is at most ${COLLECT_LIMITS.idChars} characters`),
  ),
  ts: v.optional(v.pipe(v.string('ts must be an ISO 8601 time'), v.isoTimestamp('ts must be an ISO 8601 time such as 2026-11-22T10:00:00.000Z'))),
  location: v.optional(record('location')),
};

const hex64 = v.pipe(
  v.string('user_hash must be a hex string'),
  v.maxLength(64, 'user_hash must be 64 hex digits (HMAC-SHA256)'),
  v.regex(HEX64, 'user_hash must be 64 hex digits (HMAC-SHA256)'),
);

/** One hash, or one per identifier (at most as many as a site has `merge_by` fields); never quotes what was sent. */
const userHash = v.optional(
  v.union(
    [
      hex64,
      v.pipe(
        record('user_hash'),
        v.check((hashes) => Object.keys(hashes).length <= LIMITS.mergeByPeople, `user_hash holds at most ${LIMITS.mergeByPeople} hashes`),
        v.check((hashes) => Object.keys(hashes).every((field) => parseFieldId(field)?.kind === 'person'), 'user_hash must be keyed by person field IDs'),
        v.record(v.string(), hex64),
      ),
    ],
    'user_hash must be 64 hex digits, or an object of them keyed by person field ID',
  ),
);

const identifySchema = v.looseObject({
  ...base,
  type: v.literal('identify'),
  fields: record('fields'),
  tags: v.optional(v.array(v.string('tags must be strings'), 'tags must be an array')),
  unset_tags: v.optional(v.array(v.string('unset_tags must be strings'), 'unset_tags must be an array')),
  user_hash: userHash,
});

const trackSchema = v.looseObject({
  ...base,
  type: v.literal('track'),
  activity_id: v.pipe(
    v.string('activity_id must be a string like "act:cm:signed-up"'),
    v.maxLength(ACTIVITY_ID_CHARS, `activity_id is at most ${ACTIVITY_ID_CHARS} characters`),
  ),
  attributes: v.optional(record('attributes')),
  person: v.optional(record('person')),
  user_hash: userHash,
});

/** An ISO time as `base.ts` takes it: the regex of valibot's `isoTimestamp`, tested without a dataset for its pipe. */
const isIsoTime = (value: unknown): boolean => typeof value === 'string' && v.ISO_TIMESTAMP_REGEX.test(value);
const isStrings = (value: unknown) => Array.isArray(value) && value.every((entry) => typeof entry === 'string');

/**
 * Whether the schema of its `type` certainly takes `raw` as it is: the common item, told without
 * valibot building a copy of it and a dataset for each of its keys (about half a microsecond an
 * item, most of what the envelope's check cost). Stricter than the schema, never looser: whatever this does not
 * take (an object of hashes, a missing key, a wrong type) goes through the schema, which stays the
 * rule and says what is wrong.
 */
export function plainlyValid(raw: Record<string, unknown>, type: 'identify' | 'track'): boolean {
  const { id, ts, location, user_hash: hash } = raw;
  if (typeof id !== 'string' || id.length < 1 || id.length > COLLECT_LIMITS.idChars) return false;
  if (ts !== undefined && !isIsoTime(ts)) return false;
  if ((location !== undefined && !isRecord(location)) || (hash !== undefined && !(typeof hash === 'string' && HEX64.test(hash)))) return false;
  if (type === 'identify')
    return (
      isRecord(raw['fields']) && (raw['tags'] === undefined || isStrings(raw['tags'])) && (raw['unset_tags'] === undefined || isStrings(raw['unset_tags']))
    );
  const { activity_id: activity, attributes, person } = raw;
  return (
    typeof activity === 'string' &&
    activity.length <= ACTIVITY_ID_CHARS &&
    (attributes === undefined || isRecord(attributes)) &&
    (person === undefined || isRecord(person))
  );
}

/** The item schemas by type (what {@link plainlyValid} must never be looser than). */
export const itemSchemas = { identify: identifySchema, track: trackSchema } as const;

export type IdentifyInput = v.InferOutput<typeof identifySchema>;
export type TrackInput = v.InferOutput<typeof trackSchema>;

export type CheckedItem =
  | { index: number; id: string; type: 'identify'; input: IdentifyInput }
  | { index: number; id: string; type: 'track'; input: TrackInput };

export type Checked = { ok: true; item: CheckedItem } | { ok: false; id: string; error: string; reason: 'invalid' | 'not_allowed' };

const message = (issues: readonly v.BaseIssue<unknown>[]) =>
  toIssues(issues)
    .map((issue) => issue.message)
    .join('; ');

/**
 * The longest field ID (or attribute, location key) an item may use: far above any real one, and
 * checked before any other work on the item, so a huge key costs one length comparison.
 */
export const MAX_FIELD_ID_CHARS = 128;

/** The first key of the item's objects longer than {@link MAX_FIELD_ID_CHARS}, as where it is. */
function longKey(raw: Record<string, unknown>): string | undefined {
  for (const member of ['fields', 'person', 'attributes', 'location']) {
    const object = raw[member];
    if (typeof object !== 'object' || object === null) continue;
    for (const key in object) if (key.length > MAX_FIELD_ID_CHARS) return member;
  }
  return undefined;
}

/** Checks the envelope of item `index` and the site's allow-lists. */
export function checkItem(raw: unknown, index: number, site: SiteConfig): Checked {
  const given = typeof raw === 'object' && raw !== null ? (raw as { id?: unknown }).id : undefined;
  // An id is echoed in the answer and the logs: only one the schema could accept.
  const id = typeof given === 'string' && given.length <= COLLECT_LIMITS.idChars ? given : `#${index}`;
  const type = typeof raw === 'object' && raw !== null ? (raw as { type?: unknown }).type : undefined;
  if (type !== 'identify' && type !== 'track') return { ok: false, id, error: `item ${index}: type must be "identify" or "track"`, reason: 'invalid' };
  const long = longKey(raw as Record<string, unknown>);
  if (long) return { ok: false, id, error: `item ${index}: a key of ${long} is longer than ${MAX_FIELD_ID_CHARS} characters`, reason: 'invalid' };
  const unsafe = forbiddenKey(raw, MAX_ITEM_DEPTH);
  if (unsafe) return { ok: false, id, error: `item ${index}: ${unsafe.message}`, reason: 'invalid' };
  // The item as it is when plainly valid (nothing reads it but to copy from it), else the schema's output.
  let input = raw as IdentifyInput | TrackInput;
  if (!plainlyValid(raw as Record<string, unknown>, type)) {
    const parsed = v.safeParse(type === 'identify' ? identifySchema : trackSchema, raw);
    if (!parsed.success) return { ok: false, id, error: message(parsed.issues), reason: 'invalid' };
    input = parsed.output;
  }
  const item = { index, id: input.id, type, input } as CheckedItem;
  const people = item.type === 'identify' ? item.input.fields : (item.input.person ?? {});
  if (site.fields) {
    const refused = Object.keys(people).filter((field) => !site.fields!.has(field));
    if (refused.length > 0)
      return {
        ok: false,
        id,
        error: `field${refused.length > 1 ? 's' : ''} ${refused.map(clipId).join(', ')} may not be sent from a browser to this site (not in its "fields" list)`,
        reason: 'not_allowed',
      };
  }
  if (item.type === 'track' && site.activities && !site.activities.has(item.input.activity_id)) {
    return {
      ok: false,
      id,
      error: `activity ${clipId(item.input.activity_id)} may not be sent from a browser to this site (not in its "activities" list)`,
      reason: 'not_allowed',
    };
  }
  if (item.type === 'track' && site.attributeRules) {
    // the tracking plan's types: a wrong-typed, unknown or missing attribute rejects this item only
    const problem = attributesProblem(site.attributeRules, item.input.activity_id, item.input.attributes ?? {});
    if (problem) return { ok: false, id, error: problem, reason: 'not_allowed' };
  }
  return { ok: true, item };
}

/** Whether `fields` holds nothing common.ts `fieldsOf('person')` refuses: the same rule, without its schema's datasets. */
function plainPerson(fields: Record<string, unknown>): boolean {
  let fine = true;
  fieldProblems(fields, 'person', () => {
    fine = false;
  });
  return fine;
}
/** The keys of an activity {@link plainActivity} checks: those ingest/collect.ts `entryOf` makes. */
export const ACTIVITY_KEYS: ReadonlySet<string> = new Set(['activity_id', 'fields', 'attributes', 'created', 'location']);

/**
 * Whether the spec's `activityEvent` certainly takes `entry`: each of its rules on the keys the
 * relay makes (ingest/collect.ts `entryOf`), checked with the spec's own parts (the activity and
 * field IDs, `fieldsOf`, `location`, the 16 kB) without valibot's copy of the entry and a dataset for
 * each of its keys (about half of what the entry's check cost). Never looser than the schema: an
 * entry with any other key, or that fails a rule here, goes through the schema, which says what is
 * wrong. test/relay/item-checks.test.ts fails when the schema's keys or rules change.
 */
export function plainActivity(entry: Record<string, unknown>): boolean {
  for (const key in entry) if (!ACTIVITY_KEYS.has(key)) return false;
  const { activity_id: activity, fields, attributes, created, location: where } = entry;
  if (parseFieldId(activity)?.kind !== 'activity') return false;
  // Fields that name the person (the schema's other way, `person_id`, is never made here).
  if (!isRecord(fields) || Object.keys(fields).length === 0 || !plainPerson(fields)) return false;
  if (attributes !== undefined && !(isRecord(attributes) && Object.keys(attributes).length <= LIMITS.attributesPerActivity)) return false;
  if (created !== undefined && !(typeof created === 'string' ? isIsoTime(created) : Number.isInteger(created))) return false;
  if (where !== undefined && !v.is(location, where)) return false;
  return jsonBytes(entry) <= LIMITS.activityBytes;
}

/** Checks the entry an item becomes against the spec's person/merge or activities/create schema. */
export function checkEntry(type: CheckedItem['type'], entry: Record<string, unknown>): string | undefined {
  if (type === 'track' && plainActivity(entry)) return undefined;
  const parsed = v.safeParse(type === 'identify' ? mergedPerson : activityEvent, entry);
  return parsed.success ? undefined : message(parsed.issues);
}
