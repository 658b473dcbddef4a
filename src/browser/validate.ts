/**
 * Local checks of what the page hands to `track`/`identify`, so bad input fails at the call
 * with a clear error instead of being rejected by the relay minutes later.
 * @module
 */
import { LIMITS } from '../api/limits.js';
import type { Fields, Item } from './types.js';
import { uuid } from './uuid.js';

/** Bad input to a tracker method; the returned Promise rejects with it. */
export class CdpInputError extends TypeError {
  override name = 'CdpInputError' as const;
}

// Written out twice: gzip stores the repeat for a few bytes, less than code joining them would take.
const FIELD = /^(bol|dtz|geo|int|phn|str|u4s|obj):(|cm|o|oc):[A-Za-z0-9][\w.-]{0,127}$/;
const ACTIVITY = /^act:cm:[A-Za-z0-9][\w.-]{0,127}$/;

/** The platform's limits for one activity event. */
export const MAX_ATTRIBUTES = LIMITS.attributesPerActivity;
export const MAX_ITEM_BYTES = LIMITS.activityBytes;

/**
 * UTF-8 bytes of `s`, as `utf8Length` of the API counts them (a parity test keeps them equal);
 * smaller than that counter in the bundle. Not `new Blob([s]).size`: each Blob is a round trip to
 * Chrome's blob registry, 100× slower.
 */
export const utf8Bytes = (s: string): number => new TextEncoder().encode(s).length;

/** The consent states `consent(…)` takes. */
export const CONSENTS = ['granted', 'denied', 'pending', 'store-only'];

/** Fields that name a person; `identify` needs one of them. */
export const PERSON_KEYS = ['str::email', 'str::ei', 'str::person_id'];

/** True for a field ID of the form `type:namespace:name`. */
export const isFieldId = (id: string): boolean => FIELD.test(id);

/** True for an activity ID of the form `act:cm:name`. */
export const isActivityId = (id: unknown): boolean => ACTIVITY.test(id as string);

/**
 * Why input was refused, as a short code in the message (`cdp.track(): E2 "signed-up"`); the
 * full text of each is in docs/snippet.md. Codes keep the snippet small.
 */
export const ERRORS = {
  /** createTracker(): options.relay and options.key are required strings */
  missingOptions: 'E1',
  /** not an activity ID (act:cm:name) */
  activityId: 'E2',
  /** expected an object keyed by field ID */
  notFields: 'E3',
  /** more fields than allowed (15 attributes) */
  tooManyFields: 'E4',
  /** not a field ID (type:namespace:name) */
  fieldId: 'E5',
  /** the item is over 16 kB */
  tooBig: 'E6',
  /** identify needs str::email, str::ei or str::person_id */
  noPerson: 'E7',
  /** consent is granted, denied or pending */
  consentState: 'E8',
  /** unknown command of `cdp(…)` */
  command: 'E9',
} as const;

/** Throws the `CdpInputError` `cdp.<where>(): <code> <detail>`. */
const fail = (where: string, code: string, detail: unknown = ''): never => {
  throw new CdpInputError(`cdp.${where}(): ${code} ${detail}`);
};

/** Throws `CdpInputError` unless `fields` is an object of at most `max` valid field IDs. */
export function checkFields(where: string, fields: unknown, max = 1 / 0): asserts fields is Fields {
  if (!fields || typeof fields !== 'object' || Array.isArray(fields)) fail(where, ERRORS.notFields);
  const keys = Object.keys(fields as object);
  if (keys.length > max) fail(where, ERRORS.tooManyFields, `${keys.length}>${max}`);
  for (const fieldId of keys) if (!isFieldId(fieldId)) fail(where, ERRORS.fieldId, fieldId);
}

/**
 * A new item made at `at` (ms), and its size in bytes of JSON, measured once here and kept with it
 * in the queue. Throws `CdpInputError` when it is over 16 kB (and JSON's own TypeError when it is not JSON).
 */
export function newItem(type: Item['type'], body: object, at: number): [Item, number] {
  const item = { id: uuid(), type, ts: new Date(at).toISOString(), ...body } as Item;
  const bytes = utf8Bytes(JSON.stringify(item));
  if (bytes > MAX_ITEM_BYTES) fail(type, ERRORS.tooBig, `${bytes}>${MAX_ITEM_BYTES}`);
  return [item, bytes];
}

export { fail };
