/** Request bodies of custom fields, activity definitions, activity events and tags. */
import * as v from 'valibot';
import { quoteId } from '../objects.js';
import { isFieldId, parseFieldId, type FieldType } from '../fields.js';
import { jsonBytes, LIMITS } from '../limits.js';
import { anyObject, fieldsOf, id, itemFields, location } from './common.js';
import { items } from './people.js';

export const CUSTOM_FIELD_TYPES = [
  'text',
  'large_text',
  'integer',
  'decimal',
  'currency',
  'price',
  'date',
  'time',
  'bool',
  'phone',
  'single_select',
  'multi_select',
  'link',
  'object',
] as const;
export type CustomFieldType = (typeof CUSTOM_FIELD_TYPES)[number];

export const ATTRIBUTE_TYPES = ['email', ...CUSTOM_FIELD_TYPES] as const;
export type AttributeType = (typeof ATTRIBUTE_TYPES)[number];

/** The type abbreviation a custom field or activity attribute of `display_type` gets in its field ID. */
export const FIELD_TYPE_OF: Readonly<Record<AttributeType, FieldType>> = {
  text: 'str',
  large_text: 'str',
  link: 'str',
  email: 'str',
  single_select: 'str',
  multi_select: 'str',
  integer: 'int',
  decimal: 'int',
  currency: 'int',
  price: 'int',
  date: 'dtz',
  time: 'dtz',
  bool: 'bol',
  phone: 'phn',
  object: 'obj',
};

export const ICON_IDS = [
  'calendar-illustration-icon',
  'caution-illustration-icon',
  'clicked-illustration-icon',
  'coupon-illustration-icon',
  'download-illustration-icon',
  'email-illustration-icon',
  'eye-illustration-icon',
  'flag-activities-illustration-icon',
  'happy-illustration-icon',
  'moneys-illustration-icon',
  'page-illustration-icon',
  'phone-illustration-icon',
  'reload-illustration-icon',
  'tag-illustration-icon',
  'time-illustration-icon',
] as const;

const name = v.pipe(v.string('name must be a string'), v.trim(), v.minLength(1, 'name must not be empty'), v.maxLength(LIMITS.stringChars));

export const customFieldCreate = v.pipe(
  v.looseObject({
    type: v.picklist(CUSTOM_FIELD_TYPES, `type must be one of ${CUSTOM_FIELD_TYPES.join(', ')} (aggregate cannot be created)`),
    name,
    values: v.optional(v.pipe(v.array(v.pipe(v.string(), v.minLength(1))), v.maxLength(1000))),
    track_changes: v.optional(v.boolean('track_changes must be true or false')),
  }),
  v.check(
    (body) => !(body.type === 'single_select' || body.type === 'multi_select') || (body.values?.length ?? 0) > 0,
    'values is required for single_select and multi_select fields',
  ),
);

const activityFieldId = v.pipe(
  v.string('activity_field_id must be a string'),
  v.check(
    (value) => parseFieldId(value)?.kind === 'activity',
    (issue) => `${quoteId(String(issue.input))} is not an activity field ID (act:cm:<name>)`,
  ),
);

const attribute = v.looseObject({
  name,
  display_type: v.picklist(ATTRIBUTE_TYPES, `display_type must be one of ${ATTRIBUTE_TYPES.join(', ')}`),
  field_id: v.optional(
    v.pipe(
      v.string(),
      v.check((value) => value === '' || value === 'do-not-map' || isFieldId(value), 'field_id must be "", "do-not-map" or a CDP field ID'),
    ),
  ),
});

const displayStyle = v.pipe(
  v.looseObject({
    type: v.picklist(['activity', 'activity_attribute', 'activity_template'], 'display_style.type must be activity, activity_attribute or activity_template'),
    title: v.optional(v.string()),
    attribute_name: v.optional(v.string()),
    attribute_field_id: v.optional(v.string()),
  }),
  v.check((style) => style.type !== 'activity_template' || (style.title ?? '') !== '', 'display_style.title is required with activity_template'),
);

const definitionEntries = {
  icon_id: v.optional(v.picklist(ICON_IDS, `icon_id must be one of ${ICON_IDS.join(', ')}`)),
  track_conversion_value: v.optional(v.boolean()),
  touch: v.optional(v.boolean()),
  filterable: v.optional(v.boolean()),
  visible_in_feeds: v.optional(v.boolean()),
  visible_in_fields: v.optional(v.boolean()),
  display_style: v.optional(displayStyle),
  attributes: v.optional(v.pipe(v.array(attribute), v.maxLength(LIMITS.attributesPerActivity, `attributes: at most ${LIMITS.attributesPerActivity}`))),
};

export const activityDefinitionCreate = v.looseObject({ name, ...definitionEntries });

export const activityDefinitionModify = v.looseObject({
  activity_field_id: activityFieldId,
  name: v.optional(name),
  state: v.optional(v.picklist(['awaiting_implementation', 'live'], 'state must be awaiting_implementation or live')),
  ...definitionEntries,
});

export const activityDefinitionDelete = v.looseObject({ activity_field_id: activityFieldId });

const activityEventWith = <F extends v.GenericSchema>(fields: F) =>
  v.pipe(
    v.looseObject({
      activity_id: activityFieldId,
      fields: v.optional(fields),
      person_id: v.optional(id),
      attributes: v.optional(
        v.pipe(
          anyObject('attributes must be an object keyed by attribute field ID'),
          v.check((attrs) => Object.keys(attrs).length <= LIMITS.attributesPerActivity, `attributes: at most ${LIMITS.attributesPerActivity} per activity`),
        ),
      ),
      location: v.optional(location),
      created: v.optional(v.union([v.pipe(v.string(), v.isoTimestamp('created must be an ISO 8601 timestamp')), v.pipe(v.number(), v.integer())])),
    }),
    v.check(
      (event) => event.person_id !== undefined || (event.fields !== undefined && Object.keys(event.fields as object).length > 0),
      'each activity needs fields that identify the person, or person_id',
    ),
    v.check((event) => jsonBytes(event) <= LIMITS.activityBytes, `an activity is at most ${LIMITS.activityBytes / 1024} kB`),
  );

export const activityEvent = activityEventWith(fieldsOf('person'));

const activitiesCreateWith = <E extends v.GenericSchema>(event: E) =>
  v.looseObject({
    activities: items(event, 'activities'),
    merge_by: v.optional(v.pipe(v.array(v.string()), v.maxLength(LIMITS.mergeByPeople))),
  });

export const activitiesCreate = activitiesCreateWith(activityEvent);
/** activities/create with each event's `fields` shape-checked only (see `itemFields`). */
export const activitiesCreateEnvelope = activitiesCreateWith(activityEventWith(itemFields()));

export const tagsGet = v.looseObject({ q: v.optional(v.pipe(v.string('q must be a string'), v.maxLength(LIMITS.stringChars))) });

/** Endpoints that take no body accept `{}` (or nothing). */
export const empty = v.looseObject({});
