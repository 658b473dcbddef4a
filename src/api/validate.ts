/**
 * Validates a request body against its endpoint's schema and limits, before anything is sent.
 *
 * @example
 * const result = validateRequest('person/merge', { people: [] });
 * if (!result.ok) result.issues // [{ path: 'people', message: 'people: at least 1 entry' }]
 * @module
 */
import * as v from 'valibot';
import { QUOTE_CHARS, quoteId } from './objects.js';
import { ENDPOINTS, type EndpointId } from './endpoints.js';
import { jsonBytes } from './limits.js';

export interface ValidationIssue {
  /** where in the body, e.g. `people[3].fields` (empty for the body itself) */
  path: string;
  message: string;
}

export type ValidationResult<T = unknown> = { ok: true; value: T } | { ok: false; issues: ValidationIssue[] };

function pathOf(issue: v.BaseIssue<unknown>): string {
  let out = '';
  for (const item of issue.path ?? []) {
    const key = (item as { key?: unknown }).key;
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'string') {
      const plain = key.length <= QUOTE_CHARS && /^[A-Za-z_][A-Za-z0-9_]*$/.test(key);
      out += plain ? (out === '' ? key : `.${key}`) : out === '' ? quoteId(key) : `[${quoteId(key)}]`;
    }
  }
  return out;
}

/** Turns valibot issues into `{path, message}` pairs, messages prefixed by their path. */
export function toIssues(issues: readonly v.BaseIssue<unknown>[]): ValidationIssue[] {
  return issues.map((issue) => {
    const path = pathOf(issue);
    // valibot's own messages end in "but received <the value>": cut it, a message never quotes a value.
    const own = issue.received !== undefined && issue.message.endsWith(` but received ${issue.received}`);
    const text = own ? issue.message.slice(0, -` but received ${issue.received}`.length) : issue.message;
    const message = path && !text.startsWith(path) ? `${path}: ${text}` : text;
    return { path, message };
  });
}

/** Keys that name an object's prototype: JSON.parse makes them own keys, and they carry no data. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** How deep a request body may nest; deeper ones are refused rather than scanned. */
export const MAX_BODY_DEPTH = 64;

/**
 * The first prototype-named key anywhere in `value`, or nesting deeper than `maxDepth`, as an
 * issue naming its path; undefined when clean.
 */
export function forbiddenKey(value: unknown, maxDepth = MAX_BODY_DEPTH, path = '', depth = 0): ValidationIssue | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth > maxDepth) return { path, message: `${path ? `${path}: ` : ''}nested more than ${maxDepth} levels` };
  // A path is made only for what is walked into: most values are not objects.
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const item: unknown = value[index];
      if (typeof item !== 'object' || item === null) continue;
      const found = forbiddenKey(item, maxDepth, `${path}[${index}]`, depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  // Own keys in Object.keys' order, without its list (a parsed object's keys come from its map's cache).
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (FORBIDDEN_KEYS.has(key)) return { path, message: `${path ? `${path}: ` : ''}key ${quoteId(key)} is not allowed` };
    const inner = (value as Record<string, unknown>)[key];
    if (typeof inner !== 'object' || inner === null) continue;
    const found = forbiddenKey(inner, maxDepth, path ? `${path}.${key}` : key, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/**
 * Checks `body` for endpoint `id`: its shape, the spec's limits and every field value.
 * `bytes` is the size of the raw body when known (else it is measured as JSON).
 */
export function validateRequest<Id extends EndpointId>(
  id: Id,
  body: unknown,
  bytes?: number,
): ValidationResult<v.InferOutput<(typeof ENDPOINTS)[Id]['schema']>> {
  const endpoint = ENDPOINTS[id];
  return validateBody(endpoint.schema as (typeof ENDPOINTS)[Id]['schema'], body, bytes, endpoint.maxBytes);
}

/** Checks `body` against `schema`: at most `maxBytes`, a JSON object, no prototype keys, then the schema. */
export function validateBody<S extends v.GenericSchema>(
  schema: S,
  body: unknown,
  bytes: number | undefined,
  maxBytes: number,
): ValidationResult<v.InferOutput<S>> {
  const size = bytes ?? jsonBytes(body ?? {});
  if (size > maxBytes) {
    return { ok: false, issues: [{ path: '', message: `request body of ${size} bytes is over the ${maxBytes}-byte (2 MB) limit` }] };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, issues: [{ path: '', message: 'request body must be a JSON object' }] };
  }
  const forbidden = forbiddenKey(body);
  if (forbidden) return { ok: false, issues: [forbidden] };
  const result = v.safeParse(schema, body);
  if (result.success) return { ok: true, value: result.output };
  return { ok: false, issues: toIssues(result.issues) };
}
