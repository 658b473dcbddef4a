/**
 * Request validation at the edge, through `validateRequest` of src/api (one source of truth).
 * Failures answer 400 with every issue named in `details`.
 * @module
 */
import { validateRequest, type EndpointId } from '../api/index.js';
import { fail } from './errors.js';

/** The validated body of endpoint `id`, or a thrown 400 naming each problem. */
export function checkBody(id: EndpointId, body: unknown, bytes?: number): Record<string, unknown> {
  const result = validateRequest(id, body, bytes);
  if (result.ok) return result.value as Record<string, unknown>;
  fail(
    result.issues.map((issue) => issue.message).join('; '),
    400,
    result.issues.map((issue) => ({ status: 'invalid', error: issue.message, path: issue.path })),
  );
}

/**
 * For merges and events: the body's shape is checked as a whole, but each item's `fields`
 * are left to the handler, which marks that one item `invalid` (the platform answers per item).
 */
export function checkBodyExceptItemFields(id: EndpointId, body: unknown, items: 'people' | 'accounts' | 'activities', bytes?: number): Record<string, unknown> {
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const list = (body as Record<string, unknown>)[items];
    if (Array.isArray(list)) {
      const blanked = list.map((item) =>
        typeof item === 'object' && item !== null && !Array.isArray(item) && 'fields' in item ? { ...item, fields: {} } : item,
      );
      // activities need identifying fields; a placeholder keeps that check from firing on the blanked copy
      const placeholder = items === 'activities' ? blanked.map((item, i) => (hasFields(list[i]) ? { ...item, fields: { 'str::ei': 'x' } } : item)) : blanked;
      checkBody(id, { ...body, [items]: placeholder }, bytes);
      return body as Record<string, unknown>;
    }
  }
  return checkBody(id, body, bytes);
}

const hasFields = (item: unknown) =>
  typeof item === 'object' &&
  item !== null &&
  typeof (item as { fields?: unknown }).fields === 'object' &&
  Object.keys((item as { fields: object }).fields ?? {}).length > 0;
