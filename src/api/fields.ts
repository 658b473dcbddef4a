/**
 * Field IDs: `type:namespace:name`, the platform's way to name every field.
 *
 * @example
 * parseFieldId('str:cm:plan') // { type: 'str', namespace: 'cm', name: 'plan', kind: 'person', custom: true }
 * buildFieldId('int', 'o', 'employees') // 'int:o:employees'
 * @module
 */

/** Type abbreviations of the spec (plus `obj`, the JSON object custom field, and `act`, activities). */
export const FIELD_TYPES = ['bol', 'dtz', 'geo', 'int', 'phn', 'str', 'u4s', 'obj', 'act'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** `''` built-in person, `cm` custom person (and activities), `o` built-in account, `oc` custom account. */
export const FIELD_NAMESPACES = ['', 'cm', 'o', 'oc'] as const;
export type FieldNamespace = (typeof FIELD_NAMESPACES)[number];

export type FieldKind = 'person' | 'account' | 'activity';

export interface FieldIdParts {
  type: FieldType;
  namespace: FieldNamespace;
  name: string;
  kind: FieldKind;
  /** true for `cm`/`oc` fields defined by the instance. */
  custom: boolean;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** IDs parsed lately: the same few field IDs come in every item, so each is parsed once. */
const parsed = new Map<string, Readonly<FieldIdParts> | undefined>();
const MAX_REMEMBERED = 1024;

/** Parses a field ID; `undefined` when it is not of the spec's form. The parts are frozen (shared). */
export function parseFieldId(id: unknown): Readonly<FieldIdParts> | undefined {
  if (typeof id !== 'string') return undefined;
  if (parsed.has(id)) return parsed.get(id);
  const parts = parse(id);
  // Bounded, so IDs an attacker makes up cannot grow it: forget all and start again.
  if (parsed.size >= MAX_REMEMBERED) parsed.clear();
  parsed.set(id, parts === undefined ? undefined : Object.freeze(parts));
  return parts;
}

function parse(id: string): FieldIdParts | undefined {
  const parts = id.split(':');
  if (parts.length !== 3) return undefined;
  const [type, namespace, name] = parts as [string, string, string];
  if (!(FIELD_TYPES as readonly string[]).includes(type)) return undefined;
  if (!(FIELD_NAMESPACES as readonly string[]).includes(namespace)) return undefined;
  if (!NAME.test(name)) return undefined;
  if (type === 'act') {
    return namespace === 'cm' ? { type, namespace, name, kind: 'activity', custom: true } : undefined;
  }
  const kind: FieldKind = namespace === 'o' || namespace === 'oc' ? 'account' : 'person';
  return { type: type as FieldType, namespace: namespace as FieldNamespace, name, kind, custom: namespace === 'cm' || namespace === 'oc' };
}

export const isFieldId = (id: unknown): id is string => parseFieldId(id) !== undefined;

/** Builds a field ID; throws `TypeError` for parts the spec does not allow. */
export function buildFieldId(type: FieldType, namespace: FieldNamespace, name: string): string {
  const id = `${type}:${namespace}:${name}`;
  if (!isFieldId(id)) throw new TypeError(`Invalid field ID parts: ${JSON.stringify(id)} is not of the form type:namespace:name`);
  return id;
}

/** An activity's field ID: `act:cm:<name>`. */
export const activityFieldId = (name: string): string => buildFieldId('act', 'cm', name);

/** The field ID of a custom field named `name` (kebab-cased, as the platform does). */
export function customFieldId(type: FieldType, kind: 'person' | 'account', name: string): string {
  const slug = name
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return buildFieldId(type, kind === 'person' ? 'cm' : 'oc', slug || 'field');
}

/** Built-in person fields and their types. */
export const PERSON_FIELDS = {
  'str::first': 'str',
  'str::last': 'str',
  'str::person_id': 'str',
  'phn::phone': 'phn',
  'str::email': 'str',
  'str::ei': 'str',
  'geo::city': 'geo',
  'geo::region': 'geo',
  'geo::country': 'geo',
  'str::postal': 'str',
  'dtz::b': 'dtz',
  'bol::gdpr': 'bol',
  'bol::p': 'bol',
  'str::u-ctx': 'str',
  'str::s-ctx': 'str',
  'bol::sp': 'bol',
  'str::soi-ctx': 'str',
  'str::soo-ctx': 'str',
  'u4s::t': 'u4s',
} as const satisfies Record<string, FieldType>;

/** Built-in account fields and their types. */
export const ACCOUNT_FIELDS = {
  'str:o:name': 'str',
  'str:o:account_id': 'str',
  'int:o:employees': 'int',
  'str:o:industry': 'str',
  'str:o:website': 'str',
  'geo:o:city': 'geo',
  'str:o:address': 'str',
  'geo:o:region': 'geo',
  'geo:o:country': 'geo',
  'str:o:postal': 'str',
  'str:o:source': 'str',
} as const satisfies Record<string, FieldType>;

/** Selectable in retrieval but not a `type:ns:name` ID. */
export const PSEUDO_FIELDS = ['tags'] as const;

/** The spec spells the account identifier three ways; all name one field. */
export const ACCOUNT_ID_ALIASES = ['str:o:account_id', 'str:o:accounts_id', 'str:o:organization_id', 'accounts_id'] as const;
export const ACCOUNT_ID_FIELD = 'str:o:account_id';

/** Maps any spelling of the account identifier to `str:o:account_id`; other IDs pass unchanged. */
export const canonicalFieldId = (id: string): string => ((ACCOUNT_ID_ALIASES as readonly string[]).includes(id) ? ACCOUNT_ID_FIELD : id);

/** Unique identifiers a person merge uses when `merge_by` is omitted, in order. */
export const DEFAULT_PERSON_MERGE_BY = ['str::email', 'str::ei'] as const;

/** Fields the platform computes; a merge may not write them. */
export const READ_ONLY_PERSON_FIELDS = ['str::person_id', 'u4s::t'] as const;

/** A field ID usable in `fields` lists of retrieval: any valid ID of the kind, or a pseudo field. */
export function isSelectableField(id: unknown, kind: 'person' | 'account'): boolean {
  if ((PSEUDO_FIELDS as readonly unknown[]).includes(id)) return true;
  if (kind === 'account' && (ACCOUNT_ID_ALIASES as readonly unknown[]).includes(id)) return true;
  const parts = parseFieldId(id);
  return parts !== undefined && parts.kind === kind;
}

/**
 * A `merge_by` value as the platform compares it when it looks a person up: an email trimmed and
 * in lower case (`Ann@Example.com ` and `ann@example.com` name one person), any other value as it is.
 */
export function identifierKey(fieldId: string, value: string): string {
  return fieldId === 'str::email' ? value.trim().toLowerCase() : value;
}
