/**
 * `$int::*`, `$bol::is`, presence (`$has_any_value`/`$has_no_value`) and ID operators.
 * Integers compare in stored units (×1000, as retrieval returns them). Presence follows the
 * spec's rule: `0` and `''` have a value, `null` has none.
 */
import type { FilterEnv, OperatorBuilder } from './types.js';
import { badValue, fieldOf, isEmpty, numberValue, rangeValue, stringList } from './util.js';

const num = (value: unknown) => (typeof value === 'number' ? value : undefined);

const compare =
  (test: (v: number, n: number) => boolean): OperatorBuilder =>
  (c, env, op) => {
    const field = fieldOf(c, op);
    const n = numberValue(c, op);
    return (r) => {
      const v = num(env.value(r, field));
      return v !== undefined && test(v, n);
    };
  };

const range =
  (inside: boolean): OperatorBuilder =>
  (c, env, op) => {
    const field = fieldOf(c, op);
    const [a, b] = rangeValue(c, op).map((v) => numberValue({ value: v }, op)) as [number, number];
    const [lo, hi] = a <= b ? [a, b] : [b, a];
    return (r) => {
      const v = num(env.value(r, field));
      return v !== undefined && (v >= lo && v <= hi) === inside;
    };
  };

/** Values an ID operator compares: the field's (e.g. tag IDs in `u4s::t`) or the record's own ID. */
function ids<R>(env: FilterEnv<R>, r: R, field: string | undefined): string[] {
  if (field === undefined) return [env.id(r)];
  const value = env.value(r, field);
  return Array.isArray(value) ? value.map(String) : isEmpty(value) ? [] : [String(value)];
}

const idTest =
  (test: (have: string[], wanted: string[]) => boolean): OperatorBuilder =>
  (c, env, op) => {
    const field = typeof c.field_id === 'string' ? c.field_id : undefined;
    const wanted = stringList(c.value, op);
    return (r) =>
      test(
        ids(env, r, field).map((id) => id.toLowerCase()),
        wanted,
      );
  };

export const SCALAR_OPERATORS: Record<string, OperatorBuilder> = {
  '$int::is': compare((v, n) => v === n),
  '$int::is_not': (c, env, op) => {
    const field = fieldOf(c, op);
    const n = numberValue(c, op);
    return (r) => num(env.value(r, field)) !== n;
  },
  '$int::greater_than': compare((v, n) => v > n),
  '$int::less_than': compare((v, n) => v < n),
  '$int::between': range(true),
  '$int::not_between': range(false),
  '$bol::is': (c, env, op) => {
    const field = fieldOf(c, op);
    const wanted = c.value === 'true' ? true : c.value === 'false' ? false : c.value;
    if (typeof wanted !== 'boolean') badValue(op, 'true or false');
    return (r) => env.value(r, field) === wanted;
  },
  $has_any_value: (c, env, op) => {
    const field = fieldOf(c, op);
    return (r) => !isEmpty(env.value(r, field));
  },
  $has_no_value: (c, env, op) => {
    const field = fieldOf(c, op);
    return (r) => isEmpty(env.value(r, field));
  },
  // `$id_is` names one ID, `$id_set_is` any of several; with a field_id they read that field.
  $id_is: idTest((have, wanted) => have.includes(wanted[0]!)),
  $id_is_not: idTest((have, wanted) => !have.includes(wanted[0]!)),
  $id_set_is: idTest((have, wanted) => wanted.some((w) => have.includes(w))),
  $id_set_is_not: idTest((have, wanted) => !wanted.some((w) => have.includes(w))),
};
