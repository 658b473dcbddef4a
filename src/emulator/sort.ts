/** Sorting records by a field: keys are computed once per record, empty values sort last. */
import { dayNumber } from './filter/date.js';

/** A comparable key for a stored value (strings ignore case, geo by name, dates by day, phones by digits). */
export function sortKey(value: unknown): number | string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'string') return value.toLowerCase();
  if (Array.isArray(value)) return sortKey(value[0]);
  if (typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if (typeof o['name'] === 'string') return o['name'].toLowerCase();
    if (typeof o['c'] === 'string' && typeof o['n'] === 'string') return o['c'] + o['n'];
    if ('year' in o) return dayNumber(o);
  }
  return JSON.stringify(value);
}

/** `list` sorted by `key` in `order`; ties and empty values keep the list's order (empties last). */
export function sortBy<T>(list: readonly T[], key: (item: T) => unknown, order: 'asc' | 'desc'): T[] {
  const keyed = list.map((item, index) => ({ item, index, key: sortKey(key(item)) }));
  const sign = order === 'asc' ? 1 : -1;
  keyed.sort((a, b) => {
    if (a.key === undefined || b.key === undefined) return a.key === b.key ? a.index - b.index : a.key === undefined ? 1 : -1;
    if (a.key === b.key) return a.index - b.index;
    if (typeof a.key !== typeof b.key) return (typeof a.key === 'number' ? -1 : 1) * sign;
    return (a.key < b.key ? -1 : 1) * sign;
  });
  return keyed.map((entry) => entry.item);
}
