/** Building blocks shared by the endpoint schemas. */
import * as v from 'valibot';
import { isRecord, quoteId } from '../objects.js';
import { isFieldId, parseFieldId, canonicalFieldId } from '../fields.js';
import { LIMITS } from '../limits.js';
import { checkFieldValue } from '../values.js';

export const fieldId = v.pipe(
  v.string('expected a field ID string'),
  v.check<string, (issue: v.CheckIssue<string>) => string>(
    (value) => isFieldId(value),
    (issue) => `${quoteId(String(issue.input))} is not a field ID of the form type:namespace:name`,
  ),
);

/**
 * A JSON object keyed by `key` (valibot's `record` alone also takes arrays, as `{"0": …}`):
 * an array where an object belongs is refused with `message`.
 */
export const record = <K extends v.GenericSchema<string>, V extends v.GenericSchema>(key: K, value: V, message: string) =>
  v.pipe(
    v.custom<Record<string, unknown>>((input) => typeof input === 'object' && input !== null && !Array.isArray(input), message),
    v.record(key, value, message),
  );

const kindOf = (id: string) => parseFieldId(canonicalFieldId(id))?.kind;

/** A field ID of the given kind; `accounts_id` is accepted for accounts (the spec's own spelling). */
export const fieldIdOf = (kind: 'person' | 'account') =>
  v.pipe(
    v.string('expected a field ID string'),
    v.check(
      (id) => kindOf(id) === kind,
      (issue) =>
        `${quoteId(String(issue.input))} is not a ${kind} field ID (${kind === 'person' ? 'type::name or type:cm:name' : 'type:o:name or type:oc:name'})`,
    ),
  );

/**
 * A JSON object of any keys and values, taken as it is (an array or a value is refused with
 * `message`). What {@link record} of `v.string()` keys and `v.unknown()` values checks too, without
 * its copy of the object key by key (a new object and two datasets a key: a third of what an
 * activity's check allocated in the relay). Every body is refused its prototype-named keys before
 * its schema runs (validate.ts `forbiddenKey`; the relay's items in ingest/items.ts).
 */
export const anyObject = (message: string) => v.custom<Record<string, unknown>>(isRecord, message);

/**
 * Any object of fields, values unchecked: the shape of an item's `fields` where the platform
 * judges each item on its own (merges, events) and a bad value marks that item, not the request.
 */
export const itemFields = () => anyObject('fields must be an object keyed by field ID');

/**
 * What is wrong with `fields` as fields of `kind` (keys field IDs of that kind, values valid for
 * the field's type, or null), told to `problem` one by one; told nothing when all is well. The rule
 * of {@link fieldsOf}, callable without a schema (the relay's plainly valid entries, ingest/items.ts).
 */
export function fieldProblems(fields: Record<string, unknown>, kind: 'person' | 'account', problem: (message: string) => void): void {
  // Own keys in Object.keys' order, without Object.entries' pair a key.
  for (const id in fields) {
    if (!Object.hasOwn(fields, id)) continue;
    const value = fields[id];
    const canonical = canonicalFieldId(id);
    if (kindOf(id) !== kind) {
      problem(`${JSON.stringify(id)} is not a ${kind} field ID`);
      continue;
    }
    const result = checkFieldValue(canonical, value);
    if (!result.ok) problem(result.error);
  }
}

/** `fields` of a merge: keys are field IDs of `kind`, values valid for the field's type (or null). */
export const fieldsOf = (kind: 'person' | 'account') =>
  v.pipe(
    anyObject('fields must be an object keyed by field ID'),
    v.rawCheck(({ dataset, addIssue }) => {
      if (dataset.typed) fieldProblems(dataset.value, kind, (message) => addIssue({ message }));
    }),
  );

export const tagList = v.pipe(
  v.array(
    v.pipe(
      v.string('a tag must be a string'),
      v.minLength(1, 'a tag must not be empty'),
      v.maxLength(LIMITS.stringChars, `a tag is at most ${LIMITS.stringChars} characters`),
    ),
  ),
  v.maxLength(100, 'at most 100 tags per record'),
);

const shortString = v.pipe(v.string(), v.maxLength(LIMITS.stringChars, `at most ${LIMITS.stringChars} characters`));

export const location = v.looseObject({
  source_ip: v.optional(v.pipe(v.string(), v.maxLength(45, 'source_ip must be an IPv4 or IPv6 address'))),
  custom: v.optional(
    v.looseObject({
      country_name: v.optional(shortString),
      region_name: v.optional(shortString),
      city_name: v.optional(shortString),
      position_name: v.optional(shortString),
      lat: v.optional(v.pipe(v.number('lat must be a number'), v.minValue(-90), v.maxValue(90))),
      lng: v.optional(v.pipe(v.number('lng must be a number'), v.minValue(-180), v.maxValue(180))),
    }),
  ),
  address: v.optional(
    v.looseObject({
      address: v.pipe(v.string('address.address must be a string'), v.minLength(1), v.maxLength(LIMITS.textChars)),
      postal_code: v.optional(shortString),
      country: v.optional(shortString),
      boost_region: v.optional(shortString),
      language: v.optional(shortString),
    }),
  ),
});

export const id = v.pipe(v.string('an ID must be a string'), v.minLength(1, 'an ID must not be empty'), v.maxLength(64));

/** `inclusion_ids` / `exclusion_ids` / `all_rows_selected`: the body of archive, restore and delete. */
export const selection = v.pipe(
  v.looseObject({
    inclusion_ids: v.optional(v.pipe(v.array(id), v.maxLength(LIMITS.recordsPerBatch, `inclusion_ids: at most ${LIMITS.recordsPerBatch} records per call`))),
    exclusion_ids: v.optional(v.array(id)),
    all_rows_selected: v.optional(v.boolean('all_rows_selected must be true or false')),
  }),
  v.check((body) => body.all_rows_selected === true || (body.inclusion_ids?.length ?? 0) > 0, 'select records with inclusion_ids or all_rows_selected: true'),
);

/** `limit` 1–500 (else taken as 50 by the platform); we refuse what is not an integer at all. */
export const paging = {
  limit: v.optional(v.pipe(v.number('limit must be a number'), v.integer('limit must be an integer'))),
  offset: v.optional(v.pipe(v.number('offset must be a number'), v.integer('offset must be an integer'), v.minValue(0, 'offset must be 0 or more'))),
  cursor_id: v.optional(
    v.pipe(v.string('cursor_id must be a string'), v.regex(/^[0-9a-f]{24}$/i, 'cursor_id must be the 24-hex cursor of a previous response')),
  ),
  sort_order: v.optional(v.picklist(['asc', 'desc'], 'sort_order must be "asc" or "desc"')),
  q: v.optional(v.pipe(v.string('q must be a string'), v.maxLength(LIMITS.stringChars))),
};

export const mergeStrategy = v.optional(v.picklist([1, 2, 3], 'merge_strategy must be 1 (append only), 2 (overwrite) or 3 (ignore existing)'));
export const findStrategy = v.optional(v.picklist([0, 1, 2], 'find_strategy must be 0 (any), 1 (next only if previous empty) or 2 (all)'));
