/**
 * The plan as the relay uses it: per activity, the attributes a browser may send, their value
 * types and which are required. Runtime-neutral (Workers and Node).
 * @module
 */
import { checkFieldValue, isRecord, type AttributeType } from '../api/index.js';
import { attributeFieldId, type Plan } from './schema.js';

export interface AttributeRule {
  name: string;
  type: AttributeType;
  required: boolean;
  values: ReadonlySet<string> | undefined;
}

/** activity ID -> (attribute field ID -> rule) */
export type ActivityRules = ReadonlyMap<string, ReadonlyMap<string, AttributeRule>>;

export function activityRules(plan: Plan): ActivityRules {
  const rules = new Map<string, Map<string, AttributeRule>>();
  for (const activity of plan.activities) {
    const attributes = new Map<string, AttributeRule>();
    for (const attribute of activity.attributes ?? []) {
      attributes.set(attributeFieldId(attribute), {
        name: attribute.name,
        type: attribute.type,
        required: attribute.required === true,
        values: attribute.values ? new Set(attribute.values) : undefined,
      });
    }
    rules.set(activity.id, attributes);
  }
  return rules;
}

const kind = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`);

/** Why `value` does not fit the attribute's type; undefined when it does. */
function valueProblem(rule: AttributeRule, id: string, value: unknown): string | undefined {
  switch (rule.type) {
    case 'text':
    case 'large_text':
    case 'link':
    case 'email':
      return typeof value === 'string' ? undefined : `expected a string, got ${kind(value)}`;
    case 'single_select':
      if (typeof value !== 'string') return `expected a string, got ${kind(value)}`;
      return !rule.values || rule.values.has(value) ? undefined : `the value is not one of ${[...rule.values].join(', ')}`;
    case 'multi_select':
      if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) return `expected an array of strings, got ${kind(value)}`;
      return value.find((item) => rule.values && !rule.values.has(item)) === undefined
        ? undefined
        : `values must be among ${[...(rule.values ?? [])].join(', ')}`;
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value)
        ? undefined
        : `expected an integer, got ${typeof value === 'number' ? 'a fraction' : kind(value)}`;
    case 'decimal':
    case 'currency':
    case 'price':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : `expected a number, got ${kind(value)}`;
    case 'bool':
      return typeof value === 'boolean' ? undefined : `expected true or false, got ${kind(value)}`;
    case 'object':
      return isRecord(value) ? undefined : `expected a JSON object, got ${kind(value)}`;
    default: {
      // date, time and phone: the platform's own value checks (objects {year, month, day} and {c, n} or {phone})
      const result = checkFieldValue(id, value);
      return result.ok ? undefined : result.error.replace(`${id}: `, '');
    }
  }
}

/**
 * Checks a track item's attributes against the plan's definition of `activityId`: no attribute
 * the plan does not define, every value of its type, every required one present.
 * @returns a reason naming the attribute, or undefined when the attributes fit.
 */
export function attributesProblem(rules: ActivityRules, activityId: string, attributes: Record<string, unknown>): string | undefined {
  const defined = rules.get(activityId);
  if (!defined) return `activity ${activityId} is not in the tracking plan`;
  for (const [id, value] of Object.entries(attributes)) {
    const rule = defined.get(id);
    if (!rule) return `attribute ${id} is not defined for ${activityId} in the tracking plan (defined: ${[...defined.keys()].join(', ') || 'none'})`;
    if (value === null) continue;
    const problem = valueProblem(rule, id, value);
    if (problem) return `attribute ${id} (${rule.type}): ${problem}`;
  }
  for (const [id, rule] of defined) {
    if (rule.required && (attributes[id] === undefined || attributes[id] === null)) return `attribute ${id} is required by the tracking plan for ${activityId}`;
  }
  return undefined;
}
