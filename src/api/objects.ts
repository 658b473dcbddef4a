/**
 * Small checks on parsed JSON that every part needs, kept in one place.
 * @module
 */

/** A JSON object: not null, not an array, not a primitive. */
/** How much of a caller's text (a field ID, an activity ID, an origin) an error message may quote. */
export const QUOTE_CHARS = 64;

/**
 * `text` for an error message: cut to {@link QUOTE_CHARS} characters and JSON-quoted. Messages
 * name ids this way and never quote values: a message ends up in logs and on the status page.
 */
export const quoteId = (text: string): string => JSON.stringify(clipId(text));

/** `text` cut to {@link QUOTE_CHARS} characters (an id named without quotes). */
export const clipId = (text: string): string => (text.length <= QUOTE_CHARS ? text : `${text.slice(0, QUOTE_CHARS)}…`);

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
