/**
 * The tracking plan: one JSON file (`cdp-edge.plan.json`) that defines the activities, their
 * attributes and types, the person custom fields, and what each site's browsers may send.
 * `checkPlan` validates it against the spec's rules in src/api and names the path of every problem.
 *
 * @example
 * const result = checkPlan(JSON.parse(text));
 * if (!result.ok) for (const problem of result.problems) console.error(`${problem.path}: ${problem.message}`);
 * @module
 */
import {
  ATTRIBUTE_TYPES,
  CUSTOM_FIELD_TYPES,
  FIELD_TYPE_OF,
  ICON_IDS,
  LIMITS,
  PERSON_FIELDS,
  READ_ONLY_PERSON_FIELDS,
  activityFieldId,
  customFieldId,
  isRecord,
  parseFieldId,
  type AttributeType,
  type CustomFieldType,
} from '../api/index.js';

export interface PlanAttribute {
  /** the attribute's name on the platform; its field ID is derived from it (`str:cm:plan`) */
  name: string;
  /** the spec's attribute `display_type` */
  type: AttributeType;
  /** a track() call without it is refused by the types and the relay @default false */
  required?: boolean;
  /** the options of a single_select or multi_select attribute */
  values?: string[];
  /** `field_id` of the definition: "" (no value), "do-not-map" or a person field ID @default 'do-not-map' */
  maps_to?: string;
}

export interface PlanActivity {
  /** `act:cm:<name>`; must be the ID the platform gives `name` */
  id: string;
  name: string;
  icon?: (typeof ICON_IDS)[number];
  touch?: boolean;
  track_conversion_value?: boolean;
  filterable?: boolean;
  visible_in_feeds?: boolean;
  display_style?: { type: 'activity' | 'activity_attribute' | 'activity_template'; title?: string; attribute_name?: string; attribute_field_id?: string };
  attributes?: PlanAttribute[];
}

export interface PlanPersonField {
  name: string;
  type: CustomFieldType;
  values?: string[];
  track_changes?: boolean;
}

export interface PlanSite {
  /** the site's public key, as in RELAY_SITES */
  key: string;
  /** activity IDs the browser may send */
  activities: string[];
  /** person field IDs the browser may send (built-in or the plan's custom fields) */
  fields: string[];
}

export interface Plan {
  $schema?: string;
  activities: PlanActivity[];
  person_fields?: PlanPersonField[];
  sites?: PlanSite[];
}

export interface PlanProblem {
  /** JSON path in the plan, e.g. `activities[1].attributes[0].type` */
  path: string;
  message: string;
}

export type PlanCheck = { ok: true; plan: Plan } | { ok: false; problems: PlanProblem[] };

/** The field ID an attribute's values are keyed by in `track()` (the emulator and platform derive it the same way). */
export const attributeFieldId = (attribute: Pick<PlanAttribute, 'name' | 'type'>): string =>
  customFieldId(FIELD_TYPE_OF[attribute.type], 'person', attribute.name);

/** The field ID of a person custom field of the plan. */
export const personFieldId = (field: Pick<PlanPersonField, 'name' | 'type'>): string => customFieldId(FIELD_TYPE_OF[field.type], 'person', field.name);

/** The activity ID the platform gives a definition called `name`. */
export const activityIdOf = (name: string): string => activityFieldId(parseFieldId(customFieldId('str', 'person', name))!.name);

const ACTIVITY_KEYS = new Set(['id', 'name', 'icon', 'touch', 'track_conversion_value', 'filterable', 'visible_in_feeds', 'display_style', 'attributes']);
const ATTRIBUTE_KEYS = new Set(['name', 'type', 'required', 'values', 'maps_to']);
const FIELD_KEYS = new Set(['name', 'type', 'values', 'track_changes']);
const SITE_KEYS = new Set(['key', 'activities', 'fields']);
const PLAN_KEYS = new Set(['$schema', 'activities', 'person_fields', 'sites']);

const isSelect = (type: string) => type === 'single_select' || type === 'multi_select';
const oneOf = (list: readonly string[]) => list.map((item) => JSON.stringify(item)).join(', ');
const nonEmptyString = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

/** Checks a parsed plan file; every problem carries the JSON path it is about. */
export function checkPlan(raw: unknown): PlanCheck {
  const problems: PlanProblem[] = [];
  const problem = (path: string, message: string): void => {
    problems.push({ path, message });
  };
  const unknownKeys = (value: Record<string, unknown>, allowed: Set<string>, path: string) => {
    for (const key of Object.keys(value)) if (!allowed.has(key)) problem(path ? `${path}.${key}` : key, `unknown key ${JSON.stringify(key)}`);
  };
  const booleans = (value: Record<string, unknown>, keys: string[], path: string) => {
    for (const key of keys) if (value[key] !== undefined && typeof value[key] !== 'boolean') problem(`${path}.${key}`, 'must be true or false');
  };
  const selectValues = (value: Record<string, unknown>, path: string) => {
    const values = value['values'];
    if (values === undefined) {
      if (isSelect(String(value['type']))) problem(`${path}.values`, `is required for ${String(value['type'])}`);
      return;
    }
    if (!Array.isArray(values) || values.length === 0 || !values.every(nonEmptyString)) problem(`${path}.values`, 'must be a non-empty array of strings');
    else if (!isSelect(String(value['type']))) problem(`${path}.values`, 'only single_select and multi_select take values');
  };

  if (!isRecord(raw))
    return { ok: false, problems: [{ path: '$', message: 'a plan is a JSON object {"activities": […], "person_fields": […], "sites": […]}' }] };
  unknownKeys(raw, PLAN_KEYS, '');

  // person custom fields: unique names, known types, at most the instance's 100
  const fieldTypes = new Map<string, string>();
  const personFields = raw['person_fields'] ?? [];
  if (!Array.isArray(personFields)) problem('person_fields', 'must be an array');
  else {
    if (personFields.length > LIMITS.customFieldsPerInstance)
      problem('person_fields', `${personFields.length} custom fields; an instance holds at most ${LIMITS.customFieldsPerInstance}`);
    personFields.forEach((field, index) => {
      const path = `person_fields[${index}]`;
      if (!isRecord(field)) {
        problem(path, 'must be an object {"name", "type"}');
        return;
      }
      unknownKeys(field, FIELD_KEYS, path);
      if (!nonEmptyString(field['name'])) {
        problem(`${path}.name`, 'must be a non-empty string');
        return;
      }
      if (!(CUSTOM_FIELD_TYPES as readonly unknown[]).includes(field['type'])) {
        problem(`${path}.type`, `unknown type ${JSON.stringify(field['type'])}; one of ${oneOf(CUSTOM_FIELD_TYPES)}`);
        return;
      }
      selectValues(field, path);
      booleans(field, ['track_changes'], path);
      const id = personFieldId(field as unknown as PlanPersonField);
      if (fieldTypes.has(id) || [...fieldTypes.keys()].some((other) => parseFieldId(other)!.name === parseFieldId(id)!.name))
        problem(`${path}.name`, `a person field named ${JSON.stringify(field['name'])} is defined twice`);
      fieldTypes.set(id, field['type'] as string);
    });
  }

  // activities: the ID the platform derives from the name, known icons and types, attributes typed one way across the plan
  const activityIds = new Set<string>();
  const attributeTypes = new Map<string, { type: string; path: string }>();
  const activities = raw['activities'];
  if (!Array.isArray(activities)) problem('activities', 'must be an array of activity definitions');
  else
    activities.forEach((activity, index) => {
      const path = `activities[${index}]`;
      if (!isRecord(activity)) {
        problem(path, 'must be an object {"id", "name", "attributes"}');
        return;
      }
      unknownKeys(activity, ACTIVITY_KEYS, path);
      const id = activity['id'];
      if (parseFieldId(id)?.kind !== 'activity') problem(`${path}.id`, `${JSON.stringify(id)} is not an activity ID (act:cm:<name>)`);
      else if (activityIds.has(id as string)) problem(`${path}.id`, `${id} is defined twice`);
      activityIds.add(id as string);
      if (!nonEmptyString(activity['name'])) problem(`${path}.name`, 'must be a non-empty string');
      else if (typeof id === 'string' && parseFieldId(id) && activityIdOf(activity['name']) !== id)
        problem(`${path}.id`, `the platform names an activity called ${JSON.stringify(activity['name'])} ${activityIdOf(activity['name'])}, not ${id}`);
      if (activity['icon'] !== undefined && !(ICON_IDS as readonly unknown[]).includes(activity['icon']))
        problem(`${path}.icon`, `unknown icon ${JSON.stringify(activity['icon'])}; one of ${oneOf(ICON_IDS)}`);
      booleans(activity, ['touch', 'track_conversion_value', 'filterable', 'visible_in_feeds'], path);
      const style = activity['display_style'];
      if (style !== undefined && (!isRecord(style) || !['activity', 'activity_attribute', 'activity_template'].includes(String(style['type']))))
        problem(`${path}.display_style`, 'must be {"type": "activity" | "activity_attribute" | "activity_template", …}');
      const attributes = activity['attributes'] ?? [];
      if (!Array.isArray(attributes)) {
        problem(`${path}.attributes`, 'must be an array');
        return;
      }
      if (attributes.length > LIMITS.attributesPerActivity)
        problem(`${path}.attributes`, `${attributes.length} attributes; an activity has at most ${LIMITS.attributesPerActivity}`);
      const names = new Set<string>();
      attributes.forEach((attribute, at) => {
        const where = `${path}.attributes[${at}]`;
        if (!isRecord(attribute)) {
          problem(where, 'must be an object {"name", "type", "required"?}');
          return;
        }
        unknownKeys(attribute, ATTRIBUTE_KEYS, where);
        if (!nonEmptyString(attribute['name'])) {
          problem(`${where}.name`, 'must be a non-empty string');
          return;
        }
        if (!(ATTRIBUTE_TYPES as readonly unknown[]).includes(attribute['type'])) {
          problem(`${where}.type`, `unknown type ${JSON.stringify(attribute['type'])}; one of ${oneOf(ATTRIBUTE_TYPES)}`);
          return;
        }
        const slug = parseFieldId(customFieldId('str', 'person', attribute['name']))!.name;
        if (names.has(slug)) problem(`${where}.name`, `two attributes of ${String(id)} are named ${JSON.stringify(attribute['name'])}`);
        names.add(slug);
        selectValues(attribute, where);
        booleans(attribute, ['required'], where);
        const mapsTo = attribute['maps_to'];
        if (mapsTo !== undefined && mapsTo !== '' && mapsTo !== 'do-not-map' && parseFieldId(mapsTo)?.kind !== 'person')
          problem(`${where}.maps_to`, `must be "", "do-not-map" or a person field ID; got ${JSON.stringify(mapsTo)}`);
        const earlier = attributeTypes.get(slug);
        if (earlier && earlier.type !== attribute['type'])
          problem(
            `${where}.type`,
            `attribute ${JSON.stringify(attribute['name'])} is ${attribute['type']} here but ${earlier.type} at ${earlier.path}; one name, one type`,
          );
        else if (!earlier) attributeTypes.set(slug, { type: attribute['type'] as string, path: `${where}.type` });
      });
    });

  // sites: only the plan's activities, and person fields that exist and a browser may write
  const sites = raw['sites'] ?? [];
  if (!Array.isArray(sites)) problem('sites', 'must be an array of {"key", "activities", "fields"}');
  else {
    const keys = new Set<string>();
    sites.forEach((site, index) => {
      const path = `sites[${index}]`;
      if (!isRecord(site)) {
        problem(path, 'must be an object {"key", "activities", "fields"}');
        return;
      }
      unknownKeys(site, SITE_KEYS, path);
      if (typeof site['key'] !== 'string' || !/^[A-Za-z0-9_.-]{1,128}$/.test(site['key']))
        problem(`${path}.key`, 'must be 1–128 letters, digits, "_", "." or "-"');
      else if (keys.has(site['key'])) problem(`${path}.key`, `site ${site['key']} is listed twice`);
      else keys.add(site['key']);
      const allowed = site['activities'];
      if (!Array.isArray(allowed)) problem(`${path}.activities`, "must be an array of the plan's activity IDs");
      else
        allowed.forEach((id, at) => {
          if (!activityIds.has(id)) problem(`${path}.activities[${at}]`, `${JSON.stringify(id)} is not an activity of this plan`);
        });
      const fields = site['fields'];
      if (!Array.isArray(fields)) problem(`${path}.fields`, 'must be an array of person field IDs');
      else
        fields.forEach((id, at) => {
          const where = `${path}.fields[${at}]`;
          const parts = parseFieldId(id);
          if (parts?.kind !== 'person') problem(where, `${JSON.stringify(id)} is not a person field ID (str::email, str:cm:<name>)`);
          else if ((READ_ONLY_PERSON_FIELDS as readonly string[]).includes(id)) problem(where, `${id} is computed by the platform; it cannot be sent`);
          else if (parts.custom ? !fieldTypes.has(id) : !(id in PERSON_FIELDS))
            problem(where, `${id} is neither a built-in person field nor one of the plan's person_fields`);
        });
    });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, plan: raw as unknown as Plan };
}

/** A problem list as lines for a terminal or an error message. */
export const formatProblems = (problems: readonly PlanProblem[]): string => problems.map((p) => `  ${p.path}: ${p.message}`).join('\n');

/** Thrown by `parsePlan` for a file that is not JSON or not a valid plan; `problems` name the paths. */
export class PlanError extends Error {
  override name = 'PlanError';
  constructor(
    readonly source: string,
    readonly problems: PlanProblem[],
  ) {
    super(`${source} is not a valid tracking plan:\n${formatProblems(problems)}`);
  }
}

/** Parses and checks plan text (or an already-parsed object, as a Worker's JSON var is); throws PlanError. */
export function parsePlan(text: unknown, source = 'the tracking plan'): Plan {
  let raw = text;
  if (typeof text === 'string') {
    try {
      raw = JSON.parse(text);
    } catch (cause) {
      throw new PlanError(source, [{ path: '$', message: `not valid JSON (${(cause as Error).message})` }]);
    }
  }
  const result = checkPlan(raw);
  if (!result.ok) throw new PlanError(source, result.problems);
  return result.plan;
}
