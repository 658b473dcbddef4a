/**
 * Finding the existing person a merge (or an activity event) is about, from its `merge_by`
 * fields, their alternates and the find strategy.
 * @module
 */
import { DEFAULT_PERSON_MERGE_BY } from '../../api/index.js';
import type { Store } from '../store.js';
import type { Person } from '../records.js';

export interface FindRules {
  /** the fields that identify a person; the defaults are the unique identifiers email then ei */
  mergeBy: readonly string[];
  /** alternates checked for a merge field: the value is also looked up in these fields */
  alt: Record<string, readonly string[]>;
  /** 0 any, 1 next only if previous empty, 2 all */
  findStrategy: 0 | 1 | 2;
}

export const defaultRules = (): FindRules => ({ mergeBy: DEFAULT_PERSON_MERGE_BY, alt: {}, findStrategy: 0 });

const present = (value: unknown) => value !== undefined && value !== null && value !== '';

/** The merge_by fields this input supplies; none means the person cannot be identified. */
export const suppliedKeys = (rules: FindRules, fields: Record<string, unknown>): string[] => rules.mergeBy.filter((key) => present(fields[key]));

function lookup(store: Store, rules: FindRules, key: string, value: unknown): Person | undefined {
  for (const field of [key, ...(rules.alt[key] ?? [])]) {
    const found = store.peopleBy(field, value)[0];
    if (found) return found;
  }
  return undefined;
}

/**
 * The person `fields` names under `rules`, or undefined when none matches.
 * Strategy 0 tries each supplied key in order; 1 uses the first supplied key only (a
 * supplied key without a match does not fall back); 2 needs every supplied key to
 * match the same person.
 */
export function findPerson(store: Store, rules: FindRules, fields: Record<string, unknown>): Person | undefined {
  const keys = suppliedKeys(rules, fields);
  if (keys.length === 0) return undefined;
  if (rules.findStrategy === 1) return lookup(store, rules, keys[0]!, fields[keys[0]!]);
  if (rules.findStrategy === 2) {
    const matches = keys.map((key) => lookup(store, rules, key, fields[key]));
    const first = matches[0];
    return first && matches.every((match) => match === first) ? first : undefined;
  }
  for (const key of keys) {
    const found = lookup(store, rules, key, fields[key]);
    if (found) return found;
  }
  return undefined;
}
