/**
 * Small checks on parsed JSON that every part needs, kept in one place.
 * @module
 */

/** A JSON object: not null, not an array, not a primitive. */
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** JSON text as a value; undefined when it is not JSON (an HTML error page, say). */
export function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (notJson) {
    if (notJson instanceof SyntaxError) return undefined;
    throw notJson;
  }
}
