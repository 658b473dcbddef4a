/**
 * Local checks of what the page hands to `track`/`identify`, so bad input fails at the call
 * with a clear error instead of being rejected by the relay minutes later.
 * @module
 */
import type { Fields } from './types.js';

/** Bad input to a tracker method; the returned Promise rejects with it. */
export class CdpInputError extends TypeError {
  override name = 'CdpInputError' as const;
}

// Written out twice: gzip stores the repeat for a few bytes, less than code joining them would take.
const FIELD = /^(bol|dtz|geo|int|phn|str|u4s|obj):(|cm|o|oc):[A-Za-z0-9][\w.-]{0,127}$/;
const ACTIVITY = /^act:cm:[A-Za-z0-9][\w.-]{0,127}$/;

/** The platform's limits for one activity event. */
export const MAX_ATTRIBUTES = 15;
export const MAX_ITEM_BYTES = 16 * 1024;

/** Fields that name a person; `identify` needs one of them. */
export const PERSON_KEYS = ['str::email', 'str::ei', 'str::person_id'];

/** True for a field ID of the form `type:namespace:name`. */
export const isFieldId = (id: string): boolean => FIELD.test(id);

/** True for an activity ID of the form `act:cm:name`. */
export const isActivityId = (id: unknown): boolean => ACTIVITY.test(id as string);

const fail = (where: string, what: string): never => {
  throw new CdpInputError(`cdp.${where}(): ${what}`);
};

/** UTF-8 bytes of `s` (not `new Blob([s]).size`: each Blob is a round trip to Chrome's blob registry, 100× slower). */
export const utf8Bytes = (s: string): number => new TextEncoder().encode(s).length;

/** Throws `CdpInputError` unless `fields` is an object of at most `max` valid field IDs. */
export function checkFields(where: string, fields: unknown, max = 1 / 0): asserts fields is Fields {
  if (!fields || typeof fields !== 'object' || Array.isArray(fields)) fail(where, 'expected an object keyed by field ID');
  const keys = Object.keys(fields as object);
  if (keys.length > max) fail(where, `${keys.length} fields; at most ${max}`);
  for (const k of keys) if (!isFieldId(k)) fail(where, `"${k}" is not a field ID (type:namespace:name)`);
}

/**
 * The item's size in bytes of JSON, measured once here and kept with it in the queue. Throws
 * `CdpInputError` when it is over 16 kB (and JSON's own TypeError when it is not JSON).
 */
export function checkSize(where: string, item: object): number {
  const bytes = utf8Bytes(JSON.stringify(item));
  if (bytes > MAX_ITEM_BYTES) fail(where, `${bytes} bytes; at most ${MAX_ITEM_BYTES}`);
  return bytes;
}

export { fail };
