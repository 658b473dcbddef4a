/**
 * Compiles a filter (already shape-checked by src/api) into a predicate, once per request,
 * so 100k records are tested without re-reading the filter. `$andgroup`/`$orgroup` nest.
 * @module
 */
import { GROUP_OPERATORS } from '../../api/index.js';
import { fail } from '../errors.js';
import { ACTIVITY_OPERATORS } from './activity.js';
import { AUDIENCE_OPERATORS } from './audience.js';
import { DATE_OPERATORS } from './date.js';
import { GEO_OPERATORS } from './geo.js';
import { LIST_OPERATORS } from './list.js';
import { PHONE_OPERATORS } from './phone.js';
import { SCALAR_OPERATORS } from './scalar.js';
import { STRING_OPERATORS } from './string.js';
import type { Condition, FilterEnv, OperatorBuilder, Predicate } from './types.js';

export type { FilterEnv, Predicate } from './types.js';

/** Every operator the emulator implements, by name. */
export const OPERATORS: Record<string, OperatorBuilder> = {
  ...STRING_OPERATORS,
  ...LIST_OPERATORS,
  ...SCALAR_OPERATORS,
  ...DATE_OPERATORS,
  ...GEO_OPERATORS,
  ...AUDIENCE_OPERATORS,
  ...PHONE_OPERATORS,
  ...ACTIVITY_OPERATORS,
};

/** A predicate for `filter`; `allowed` is the endpoint's operator list (from src/api). */
export function compileFilter<R>(filter: unknown, env: FilterEnv<R>, allowed: readonly string[]): Predicate<R> {
  const [operator, body] = Object.entries(filter as Record<string, unknown>)[0] ?? [];
  if (operator === undefined || !allowed.includes(operator)) fail(`unknown filter operator ${JSON.stringify(operator)}`);
  if ((GROUP_OPERATORS as readonly string[]).includes(operator)) {
    const parts = (body as unknown[]).map((inner) => compileFilter(inner, env, allowed));
    return operator === '$andgroup' ? (r) => parts.every((p) => p(r)) : (r) => parts.some((p) => p(r));
  }
  const build = OPERATORS[operator];
  if (!build) fail(`filter operator ${JSON.stringify(operator)} is not supported here`);
  return build(body as Condition, env, operator);
}
