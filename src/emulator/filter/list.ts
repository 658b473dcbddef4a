/**
 * `$str::list_*` (ordered, duplicates kept) and `$str::set_*` (unordered) operators, on array
 * fields such as multi-select custom fields and `tags`. Our reading of the names: `contains`
 * = an item equals the value; `*_item_contains` = that item contains the text; `*_item_is` =
 * that item equals it; `contains_less_than|more_than` and `has_exactly` count items.
 */
import type { Condition, FilterEnv, OperatorBuilder, Predicate } from './types.js';
import { fieldOf, numberValue, stringList } from './util.js';

function items<R>(env: FilterEnv<R>, r: R, field: string): string[] {
  const value = env.value(r, field);
  if (Array.isArray(value)) return value.map((item) => String(item).toLowerCase());
  if (typeof value === 'string') return [value.toLowerCase()];
  return [];
}

type ListTest = (list: string[], wanted: string[], count: number) => boolean;

const byValue =
  (test: ListTest): OperatorBuilder =>
  <R>(c: Condition, env: FilterEnv<R>, op: string): Predicate<R> => {
    const field = fieldOf(c, op);
    const wanted = stringList(c.value, op);
    return (r) => test(items(env, r, field), wanted, 0);
  };

const byCount =
  (test: (size: number, n: number) => boolean): OperatorBuilder =>
  <R>(c: Condition, env: FilterEnv<R>, op: string): Predicate<R> => {
    const field = fieldOf(c, op);
    const n = numberValue(c, op);
    return (r) => test(items(env, r, field).length, n);
  };

const first = (list: string[]) => list[0];
const last = (list: string[]) => list[list.length - 1];
const has = (list: string[], wanted: string[]) => wanted.some((w) => list.includes(w));

const common = (kind: 'list' | 'set'): Record<string, OperatorBuilder> => ({
  [`$str::${kind}_contains`]: byValue((list, wanted) => has(list, wanted)),
  [`$str::${kind}_does_not_contains`]: byValue((list, wanted) => !has(list, wanted)),
  [`$str::${kind}_contains_less_than`]: byCount((size, n) => size < n),
  [`$str::${kind}_contains_more_than`]: byCount((size, n) => size > n),
  [`$str::${kind}_has_exactly`]: byCount((size, n) => size === n),
  [`$str::${kind}_first_item_contains`]: byValue((list, [w]) => first(list)?.includes(w!) ?? false),
  [`$str::${kind}_first_item_does_not_contains`]: byValue((list, [w]) => !(first(list)?.includes(w!) ?? false)),
  [`$str::${kind}_first_item_is`]: byValue((list, [w]) => first(list) === w),
  [`$str::${kind}_first_item_is_not`]: byValue((list, [w]) => first(list) !== w),
  [`$str::${kind}_last_item_contains`]: byValue((list, [w]) => last(list)?.includes(w!) ?? false),
});

const sameSet = (list: string[], wanted: string[]) => {
  const a = new Set(list);
  const b = new Set(wanted);
  return a.size === b.size && [...a].every((item) => b.has(item));
};

export const LIST_OPERATORS: Record<string, OperatorBuilder> = {
  ...common('list'),
  ...common('set'),
  '$str::list_last_item_does_not_contains': byValue((list, [w]) => !(last(list)?.includes(w!) ?? false)),
  '$str::list_last_item_is': byValue((list, [w]) => last(list) === w),
  '$str::list_last_item_is_not': byValue((list, [w]) => last(list) !== w),
  '$str::set_contains_any': byValue((list, wanted) => has(list, wanted)),
  '$str::set_is': byValue((list, wanted) => sameSet(list, wanted)),
  '$str::set_is_not': byValue((list, wanted) => !sameSet(list, wanted)),
};
