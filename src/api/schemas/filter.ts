/**
 * Filters: one operator key whose value holds `field_id` and `value`; `$andgroup` and
 * `$orgroup` hold an array of filters. An unknown operator is refused, naming it.
 *
 * @example
 * { "$andgroup": [
 *   { "$str::is": { "field_id": "str::email", "value": "ann@example.com" } },
 *   { "$orgroup": [ { "$has_any_value": { "field_id": "str::first" } } ] } ] }
 * @module
 */
import * as v from 'valibot';
import { isRecord } from '../objects.js';

export const GROUP_OPERATORS = ['$andgroup', '$orgroup'] as const;

/** Every operator of person retrieval, as the spec lists them. */
export const PERSON_FILTER_OPERATORS = [
  '$act::first',
  '$act::has_not_occurred',
  '$act::has_occurred',
  '$act::last',
  ...GROUP_OPERATORS,
  '$bol::is',
  '$dtz::absolute_after',
  '$dtz::absolute_before',
  '$dtz::absolute_between',
  '$dtz::absolute_on',
  '$dtz::age_exactly',
  '$dtz::age_less_than',
  '$dtz::age_more_than',
  '$dtz::anniversary',
  '$dtz::occurs_in',
  '$dtz::occurs_in_less_than',
  '$dtz::occurs_in_more_than',
  '$dtz::relative_exactly',
  '$dtz::relative_less_than',
  '$dtz::relative_more_than',
  '$geo::is',
  '$geo::is_not',
  '$proximity_is_not_within',
  '$proximity_is_within',
  '$has_any_value',
  '$has_no_value',
  '$id_is',
  '$id_is_not',
  '$id_set_is',
  '$id_set_is_not',
  '$int::between',
  '$int::greater_than',
  '$int::is',
  '$int::is_not',
  '$int::less_than',
  '$int::not_between',
  '$is_member_of',
  '$is_not_member_of',
  '$is_not_subscriber_of',
  '$is_opted_in',
  '$is_opted_out',
  '$is_push_opted_in',
  '$is_push_opted_out',
  '$is_subscriber_of',
  '$phn::in_iso2_country_codes',
  '$phn::iis',
  '$phn::iis_not',
  '$phn::starts',
  '$str::between',
  '$str::contains',
  '$str::does_not_contains',
  '$str::ends',
  '$str::greater_than',
  '$str::is',
  '$str::is_not',
  '$str::less_than',
  '$str::list_contains',
  '$str::list_contains_less_than',
  '$str::list_contains_more_than',
  '$str::list_does_not_contains',
  '$str::list_first_item_contains',
  '$str::list_first_item_does_not_contains',
  '$str::list_first_item_is',
  '$str::list_first_item_is_not',
  '$str::list_has_exactly',
  '$str::list_last_item_contains',
  '$str::list_last_item_does_not_contains',
  '$str::list_last_item_is',
  '$str::list_last_item_is_not',
  '$str::set_contains',
  '$str::set_contains_any',
  '$str::set_contains_less_than',
  '$str::set_contains_more_than',
  '$str::set_does_not_contains',
  '$str::set_first_item_contains',
  '$str::set_first_item_does_not_contains',
  '$str::set_first_item_is',
  '$str::set_first_item_is_not',
  '$str::set_has_exactly',
  '$str::set_is',
  '$str::set_is_not',
  '$str::set_last_item_contains',
] as const;

/** Organization retrieval filters. */
export const ORGANIZATION_FILTER_OPERATORS = ['$has_any_value', '$has_no_value', '$str::is', ...GROUP_OPERATORS] as const;

/** The people-to-account add/remove filter. */
export const CONTACTS_LINK_FILTER_OPERATORS = ['$str::contains', '$str::is'] as const;

export type PersonFilterOperator = (typeof PERSON_FILTER_OPERATORS)[number];

/** A filter condition: `field_id` plus a `value` whose shape depends on the operator. */
export interface FilterCondition {
  field_id?: string;
  value?: unknown;
  [key: string]: unknown;
}
export type Filter = { [operator: string]: FilterCondition | Filter[] };

const MAX_DEPTH = 8;
const MAX_CONDITIONS = 200;

/** Walks a filter; returns the first problem as a sentence, or undefined. */
export function filterProblem(filter: unknown, operators: readonly string[], path = 'filter', depth = 0, count = { n: 0 }): string | undefined {
  if (!isRecord(filter)) return `${path} must be an object with one operator key`;
  const keys = Object.keys(filter);
  if (keys.length !== 1) return `${path} must have exactly one operator key, got ${keys.length}`;
  const operator = keys[0]!;
  if (!operators.includes(operator)) return `${path}: unknown filter operator ${JSON.stringify(operator)}`;
  if (++count.n > MAX_CONDITIONS) return `filter has more than ${MAX_CONDITIONS} conditions`;
  const body = filter[operator];
  if ((GROUP_OPERATORS as readonly string[]).includes(operator)) {
    if (depth >= MAX_DEPTH) return `${path}: groups nest at most ${MAX_DEPTH} deep`;
    if (!Array.isArray(body) || body.length === 0) return `${path}.${operator} must be a non-empty array of filters`;
    for (const [index, inner] of body.entries()) {
      const problem = filterProblem(inner, operators, `${path}.${operator}[${index}]`, depth + 1, count);
      if (problem) return problem;
    }
    return undefined;
  }
  if (!isRecord(body)) return `${path}.${operator} must be an object with field_id and value`;
  const needsField = !operator.startsWith('$is_') && !operator.startsWith('$id_');
  if (needsField && typeof body['field_id'] !== 'string') return `${path}.${operator}.field_id must be a field ID string`;
  return undefined;
}

export const filterOf = (operators: readonly string[]) =>
  v.pipe(
    v.unknown(),
    v.rawCheck(({ dataset, addIssue }) => {
      const problem = filterProblem(dataset.value, operators);
      if (problem) addIssue({ message: problem });
    }),
    v.transform((value) => value as Filter),
  );
