/**
 * `$str::*` operators. Comparisons ignore case (as the platform's search does). The negative
 * operators (`is_not`, `does_not_contains`) also match records without the field — our choice,
 * as in most CDPs' segment builders. `value` may be an array for `is`/`is_not` (any of / none of).
 */
import type { OperatorBuilder } from './types.js';
import { fieldOf, rangeValue, stringList, text } from './util.js';

const lower = (value: unknown) => text(value)?.toLowerCase();

const compare =
  (test: (value: string, bound: string) => boolean): OperatorBuilder =>
  (c, env, op) => {
    const field = fieldOf(c, op);
    const [bound] = stringList(c.value, op);
    return (r) => {
      const v = lower(env.value(r, field));
      return v !== undefined && test(v, bound!);
    };
  };

export const STRING_OPERATORS: Record<string, OperatorBuilder> = {
  '$str::is': (c, env, op) => {
    const field = fieldOf(c, op);
    const wanted = new Set(stringList(c.value, op));
    return (r) => {
      const v = lower(env.value(r, field));
      return v !== undefined && wanted.has(v);
    };
  },
  '$str::is_not': (c, env, op) => {
    const field = fieldOf(c, op);
    const unwanted = new Set(stringList(c.value, op));
    return (r) => {
      const v = lower(env.value(r, field));
      return v === undefined || !unwanted.has(v);
    };
  },
  '$str::contains': (c, env, op) => {
    const field = fieldOf(c, op);
    const [needle] = stringList(c.value, op);
    return (r) => lower(env.value(r, field))?.includes(needle!) ?? false;
  },
  '$str::does_not_contains': (c, env, op) => {
    const field = fieldOf(c, op);
    const [needle] = stringList(c.value, op);
    return (r) => !(lower(env.value(r, field))?.includes(needle!) ?? false);
  },
  '$str::ends': (c, env, op) => {
    const field = fieldOf(c, op);
    const [suffix] = stringList(c.value, op);
    return (r) => lower(env.value(r, field))?.endsWith(suffix!) ?? false;
  },
  '$str::greater_than': compare((v, bound) => v > bound),
  '$str::less_than': compare((v, bound) => v < bound),
  '$str::between': (c, env, op) => {
    const field = fieldOf(c, op);
    const [from, to] = rangeValue(c, op).map((v) => stringList(v, op)[0]!);
    return (r) => {
      const v = lower(env.value(r, field));
      return v !== undefined && v >= from! && v <= to!;
    };
  },
};
