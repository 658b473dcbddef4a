/** Request bodies of the person endpoints and audience subscription. */
import * as v from 'valibot';
import { quoteId } from '../objects.js';
import { isSelectableField } from '../fields.js';
import { LIMITS } from '../limits.js';
import { fieldIdOf, fieldsOf, findStrategy, id, itemFields, location, mergeStrategy, paging, record, tagList } from './common.js';
import { filterOf, PERSON_FILTER_OPERATORS } from './filter.js';

const items = <T extends v.GenericSchema>(item: T, what: string) =>
  v.pipe(
    v.array(item, `${what} must be an array`),
    v.minLength(1, `${what}: at least 1 entry`),
    v.maxLength(LIMITS.itemsPerRequest, `${what}: at most ${LIMITS.itemsPerRequest} entries per request (the client and the relay can chunk larger calls)`),
  );

const mergedPersonWith = <F extends v.GenericSchema>(fields: F) =>
  v.looseObject({
    // An empty `fields` is the platform's per-person `invalid` (no identifier), not a bad request.
    fields,
    location: v.optional(location),
    tags: v.optional(tagList),
    unset_tags: v.optional(tagList),
    clear_fields: v.optional(
      record(fieldIdOf('person'), v.boolean('clear_fields values must be true or false'), 'clear_fields must be an object of {"<field id>": true}'),
    ),
  });

export const mergedPerson = mergedPersonWith(fieldsOf('person'));

const personMergeWith = <P extends v.GenericSchema>(person: P) =>
  v.pipe(
    v.looseObject({
      people: items(person, 'people'),
      async: v.optional(v.boolean('async must be true or false')),
      merge_by: v.optional(
        v.pipe(
          v.array(fieldIdOf('person')),
          v.minLength(1, 'merge_by: at least one field ID'),
          v.maxLength(LIMITS.mergeByPeople, `merge_by: at most ${LIMITS.mergeByPeople} field IDs`),
          v.check((keys) => !keys.includes('str::person_id') || keys.length === 1, 'merge_by: str::person_id must be the only entry'),
        ),
      ),
      merge_by_alt_fields: v.optional(
        record(fieldIdOf('person'), v.array(fieldIdOf('person')), 'merge_by_alt_fields must map a merge field ID to an array of field IDs'),
      ),
      merge_strategy: mergeStrategy,
      find_strategy: findStrategy,
      skip_non_existing: v.optional(v.boolean('skip_non_existing must be true or false')),
      suppression_list_field_id: v.optional(fieldIdOf('person')),
    }),
    v.check(
      (body) => (body.people as { clear_fields?: unknown }[]).every((person) => !person.clear_fields || (body.merge_strategy ?? 2) === 2),
      'clear_fields needs merge_strategy 2',
    ),
  );

export const personMerge = personMergeWith(mergedPerson);
/** person/merge with each person's `fields` shape-checked only (see `itemFields`). */
export const personMergeEnvelope = personMergeWith(mergedPersonWith(itemFields()));

const selectable = (kind: 'person' | 'account') =>
  v.pipe(
    v.string(),
    v.check(
      (field) => isSelectableField(field, kind),
      (issue) => `${quoteId(String(issue.input))} is not a ${kind} field ID`,
    ),
  );

const fieldList = (kind: 'person' | 'account') =>
  v.pipe(v.array(selectable(kind)), v.maxLength(LIMITS.fieldIdsPerRequest, `fields: at most ${LIMITS.fieldIdsPerRequest} field IDs`));

export const AUDIENCE_FILTERS = ['subscribers', 'unsubscribed', 'unsubscribed-from-audience', 'email-subscribers', 'sms-subscribers'] as const;

export const personGet = v.pipe(
  v.looseObject({
    ...paging,
    sort_by_field_id: v.optional(selectable('person')),
    fields: v.optional(fieldList('person')),
    type: v.optional(v.picklist(['', 'archived'], 'type must be "" or "archived"')),
    filter: v.optional(filterOf(PERSON_FILTER_OPERATORS)),
    audience_id: v.optional(id),
    audience_filter: v.optional(v.picklist(AUDIENCE_FILTERS, `audience_filter must be one of ${AUDIENCE_FILTERS.join(', ')}`)),
  }),
  v.check(
    (body) => body.type !== 'archived' || (body.filter === undefined && body.audience_id === undefined),
    'with type "archived" only q is accepted (no filter or audience)',
  ),
  v.check((body) => body.audience_filter === undefined || body.audience_id !== undefined, 'audience_filter needs audience_id'),
);

export const personGetByIds = v.looseObject({
  contact_ids: v.pipe(
    v.array(id, 'contact_ids must be an array of person IDs'),
    v.minLength(1, 'contact_ids: at least one ID'),
    v.maxLength(500, 'contact_ids: at most 500 IDs'),
  ),
  fields: v.optional(fieldList('person')),
});

const personRef = v.pipe(
  v.looseObject({ person_id: v.optional(id), email: v.optional(v.string()), external_id: v.optional(v.string()) }),
  v.check(
    (ref) => ref.person_id !== undefined || ref.email !== undefined || ref.external_id !== undefined,
    'each person needs person_id, email or external_id',
  ),
);

export const personSubscriptions = v.looseObject({ people: items(personRef, 'people') });

export const audienceSubscribe = v.looseObject({
  audience_id: id,
  async: v.optional(v.boolean()),
  people: items(
    v.pipe(
      v.looseObject({
        email: v.optional(v.string()),
        person_id: v.optional(id),
        external_id: v.optional(v.string()),
        subscribed: v.optional(v.boolean('subscribed must be true or false')),
        sms_opted_in: v.optional(v.boolean('sms_opted_in must be true or false')),
      }),
      v.check((p) => p.email !== undefined || p.person_id !== undefined || p.external_id !== undefined, 'each person needs email, person_id or external_id'),
      v.check((p) => p.subscribed !== undefined || p.sms_opted_in !== undefined, 'each person needs subscribed or sms_opted_in'),
    ),
    'people',
  ),
});

export { fieldList, selectable, items };
