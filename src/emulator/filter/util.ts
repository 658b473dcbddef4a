/** Small helpers shared by the operator families. */
import { fail } from '../errors.js';
import type { Condition } from './types.js';

export const isEmpty = (value: unknown): boolean => value === undefined || value === null;

/** Refuses a condition whose `value` does not fit the operator, naming both. */
export function badValue(operator: string, expected: string): never {
  fail(`filter ${operator}: value must be ${expected}`);
}

export function fieldOf(condition: Condition, operator: string): string {
  if (typeof condition.field_id !== 'string') fail(`filter ${operator}: field_id is required`);
  return condition.field_id;
}

export function numberValue(condition: Condition, operator: string): number {
  const value = typeof condition.value === 'string' && condition.value.trim() !== '' ? Number(condition.value) : condition.value;
  if (typeof value !== 'number' || !Number.isFinite(value)) badValue(operator, 'a number');
  return value;
}

/** `[a, b]` or `{from, to}` (both accepted: the spec does not show the between shape). */
export function rangeValue(condition: Condition, operator: string): [unknown, unknown] {
  const value = condition.value as unknown;
  if (Array.isArray(value) && value.length === 2) return [value[0], value[1]];
  if (typeof value === 'object' && value !== null && 'from' in value && 'to' in value)
    return [(value as { from: unknown }).from, (value as { to: unknown }).to];
  badValue(operator, 'a pair: [from, to] or {"from": …, "to": …}');
}

/** A string, or the display string of a geo `{name}` value. */
export function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'object' && value !== null && typeof (value as { name?: unknown }).name === 'string') return (value as { name: string }).name;
  return undefined;
}

/** A string or an array of strings as a list of lower-cased strings. */
export function stringList(value: unknown, operator: string): string[] {
  const list = Array.isArray(value) ? value : [value];
  if (!list.every((item) => typeof item === 'string' || typeof item === 'number')) badValue(operator, 'a string or an array of strings');
  return list.map((item) => String(item).toLowerCase());
}
