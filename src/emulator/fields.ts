/**
 * Custom fields (person and account; accounts and organizations share one list) and the
 * checks of a merge's `fields` against built-in and defined fields.
 * @module
 */
import {
  ACCOUNT_FIELDS,
  LIMITS,
  PERSON_FIELDS,
  canonicalFieldId,
  checkFieldValue,
  FIELD_TYPE_OF,
  customFieldId,
  parseFieldId,
  scaleInt,
  type CustomFieldType,
  type ResponseMap,
} from '../api/index.js';
import { fail, PlatformHttpError } from './errors.js';
import type { Store } from './store.js';
import type { CustomField } from './records.js';

/** The type abbreviation of a `display_type` lives with the definition schemas; re-exported for the emulator's modules. */
export { FIELD_TYPE_OF };

const kebabToSnake = (name: string) => name.replace(/-/g, '_');

type Kind = 'person' | 'account';
const registry = (store: Store, kind: Kind) => (kind === 'person' ? store.personFields : store.accountFields);

/** The custom-field create endpoints: 100 per instance (people and accounts together), names unique. */
export function createCustomField(
  store: Store,
  kind: Kind,
  body: { type: CustomFieldType; name: string; values?: string[] | undefined; track_changes?: boolean | undefined },
): ResponseMap['person/custom-field/create'] {
  const fields = registry(store, kind);
  if (store.personFields.size + store.accountFields.size >= LIMITS.customFieldsPerInstance) {
    fail(`This instance already has ${LIMITS.customFieldsPerInstance} custom fields, the most allowed; reuse one instead`);
  }
  const id = customFieldId(FIELD_TYPE_OF[body.type], kind, body.name);
  const name = parseFieldId(id)!.name;
  for (const field of fields.values()) {
    if (field.name.toLowerCase() === body.name.toLowerCase() || parseFieldId(field.id)!.name === name) {
      throw new PlatformHttpError(409, `A custom ${kind} field named ${JSON.stringify(field.name)} already exists (${field.id}); names must be unique`);
    }
  }
  const select = body.type === 'single_select' || body.type === 'multi_select';
  const field: CustomField = {
    id,
    name: body.name,
    display_type: body.type,
    liquid_name: `${kind === 'person' ? 'people' : 'accounts'}.custom.${kebabToSnake(name)}`,
    track_changes: body.track_changes ?? false,
  };
  if (select) field.dic_items = [...new Set(body.values ?? [])];
  fields.set(id, field);
  store.touch();
  const out: ResponseMap['person/custom-field/create'] = { name: field.name, field_id: id, display_type: body.type, track_changes: field.track_changes };
  if (field.dic_items) out.values = field.dic_items;
  return out;
}

const definition = (field: CustomField) => {
  const out: { id: string; name: string; display_type: string; liquid_name: string; dic_items?: string[] } = {
    id: field.id,
    name: field.name,
    display_type: field.display_type,
    liquid_name: field.liquid_name,
  };
  if (field.dic_items) out.dic_items = field.dic_items;
  return out;
};

/** `person/custom-field/get`: entries `{field, tracked_value}` (the spec's person shape). */
export function personCustomFields(store: Store): ResponseMap['person/custom-field/get'] {
  return { fields: [...store.personFields.values()].map((field) => ({ field: definition(field), tracked_value: field.track_changes })) };
}

/** `accounts|organizations/custom-field/get`: the field objects themselves (the spec's account shape). */
export function accountCustomFields(store: Store): ResponseMap['accounts/custom-field/get'] {
  return { fields: [...store.accountFields.values()].map(definition) };
}

function checkSelect(id: string, field: CustomField, value: unknown): { ok: true; value: unknown } | { ok: false; error: string } {
  const items = field.dic_items ?? [];
  const allowed = (item: unknown) => typeof item === 'string' && items.includes(item);
  if (field.display_type === 'single_select') {
    return allowed(value)
      ? { ok: true, value }
      : { ok: false, error: `${id}: ${JSON.stringify(value)} is not one of the field's values (${items.join(', ')})` };
  }
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || !list.every(allowed))
    return { ok: false, error: `${id}: expected values from ${items.join(', ')} (a string or an array of them)` };
  return { ok: true, value: [...new Set(list as string[])] };
}

/** A checked `fields` object: stored forms (phones `{c,n}`, integers ×1000, `null` = clear). */
export type CheckedFields = Record<string, unknown>;

/**
 * Checks a merge's `fields` against the built-in fields of `kind` and the defined custom
 * fields (an undefined custom field is refused: create it first). Returns the first problem.
 */
export function checkRecordFields(store: Store, kind: Kind, fields: unknown): { ok: true; value: CheckedFields } | { ok: false; error: string } {
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) return { ok: false, error: 'fields must be an object keyed by field ID' };
  const builtIn: Record<string, string> = kind === 'person' ? PERSON_FIELDS : ACCOUNT_FIELDS;
  const out: CheckedFields = {};
  for (const [rawId, value] of Object.entries(fields)) {
    const id = kind === 'account' ? canonicalFieldId(rawId) : rawId;
    const parts = parseFieldId(id);
    if (!parts || parts.kind !== kind) return { ok: false, error: `${JSON.stringify(rawId)} is not a ${kind} field ID` };
    let checked: { ok: true; value: unknown } | { ok: false; error: string };
    if (parts.custom) {
      const field = registry(store, kind).get(id);
      if (!field)
        return {
          ok: false,
          error: `${id} is not a defined custom field; create it with ${kind === 'person' ? 'person' : 'accounts'}/custom-field/create first`,
        };
      checked =
        value !== null && (field.display_type === 'single_select' || field.display_type === 'multi_select')
          ? checkSelect(id, field, value)
          : checkFieldValue(id, value);
    } else {
      if (!Object.hasOwn(builtIn, id))
        return { ok: false, error: `${id} is not a built-in ${kind} field (custom fields use the ${kind === 'person' ? 'cm' : 'oc'} namespace)` };
      checked = checkFieldValue(id, value);
    }
    if (!checked.ok) return checked;
    out[id] = parts.type === 'int' && typeof checked.value === 'number' ? scaleInt(checked.value) : checked.value;
  }
  return { ok: true, value: out };
}

/** A custom multi-select field: merges add to its values unless it was cleared first (spec, merge rule 4). */
export function isMultiSelect(store: Store, kind: Kind, id: string): boolean {
  return registry(store, kind).get(id)?.display_type === 'multi_select';
}
