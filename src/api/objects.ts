/**
 * Small checks on parsed JSON that every part needs, kept in one place.
 * @module
 */

/** A JSON object: not null, not an array, not a primitive. */
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
