/**
 * Field values: checks a value against the type named by its field ID, and normalises it
 * to the form the platform stores (phones as `{c, n}`, integers scaled by 1,000).
 *
 * @example
 * checkFieldValue('phn::phone', { phone: '+44 20 7946 0000', parse_with_country_code: true })
 * // { ok: true, value: { c: '44', n: '2079460000' } }
 * checkFieldValue('int:cm:score', 'ten') // { ok: false, error: 'int:cm:score: expected a number, got string' }
 * @module
 */
import { parseFieldId, type FieldType } from './fields.js';
import { LIMITS } from './limits.js';
import { isRecord, quoteId } from './objects.js';

export interface PhoneValue {
  c: string;
  n: string;
}
export interface GeoValue {
  name: string;
}
export interface DateValue {
  year: number;
  month: number;
  day: number;
  hour?: number;
  minute?: number;
  second?: number;
  timezone?: string;
}

export type CheckResult<T = unknown> = { ok: true; value: T } | { ok: false; error: string };

export interface CheckOptions {
  /** Country calling code for phone numbers given without one. @default '1' */
  defaultCountryCode?: string;
}

/** ITU country calling codes, longest match first when parsing `+CC…` numbers. */
const CALLING_CODES = new Set(
  (
    '1 7 20 27 30 31 32 33 34 36 39 40 41 43 44 45 46 47 48 49 51 52 53 54 55 56 57 58 60 61 62 63 64 65 66 81 82 84 86 90 91 92 93 94 95 98 ' +
    '211 212 213 216 218 220 221 222 223 224 225 226 227 228 229 230 231 232 233 234 235 236 237 238 239 240 241 242 243 244 245 246 248 249 ' +
    '250 251 252 253 254 255 256 257 258 260 261 262 263 264 265 266 267 268 269 290 291 297 298 299 350 351 352 353 354 355 356 357 358 359 ' +
    '370 371 372 373 374 375 376 377 378 380 381 382 383 385 386 387 389 420 421 423 500 501 502 503 504 505 506 507 508 509 590 591 592 593 ' +
    '594 595 596 597 598 599 670 672 673 674 675 676 677 678 679 680 681 682 683 685 686 687 688 689 690 691 692 850 852 853 855 856 880 886 ' +
    '960 961 962 963 964 965 966 967 968 970 971 972 973 974 975 976 977 992 993 994 995 996 998'
  ).split(' '),
);

const typeName = (value: unknown): string => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);
const digits = (value: unknown): string => String(value).replace(/[^0-9]/g, '');

/** Splits `+CC NNN…` digits into calling code and national number. */
export function splitCallingCode(allDigits: string): PhoneValue | undefined {
  for (const length of [1, 2, 3]) {
    const c = allDigits.slice(0, length);
    if (CALLING_CODES.has(c)) return { c, n: allDigits.slice(length).replace(/^0/, '') };
  }
  return undefined;
}

function checkPhone(id: string, value: unknown, options: CheckOptions): CheckResult<PhoneValue> {
  if (!isRecord(value)) return { ok: false, error: `${id}: expected a phone object {c, n} or {phone, parse_with_country_code}, got ${typeName(value)}` };
  let phone: PhoneValue | undefined;
  if ('phone' in value) {
    if (typeof value['phone'] !== 'string') return { ok: false, error: `${id}: phone must be a string` };
    const all = digits(value['phone']);
    if (value['parse_with_country_code'] === true || value['phone'].trim().startsWith('+')) {
      phone = splitCallingCode(all);
      if (!phone) return { ok: false, error: `${id}: the phone number does not start with a known country code` };
    } else {
      phone = { c: options.defaultCountryCode ?? '1', n: all.replace(/^0/, '') };
    }
  } else if ('c' in value || 'n' in value) {
    const c = digits(value['c'] ?? '');
    const n = digits(value['n'] ?? '');
    if (!/^[0-9]+$/.test(String(value['c'])) && typeof value['c'] !== 'number') {
      return { ok: false, error: `${id}: c must be the country code digits` };
    }
    phone = { c, n: n.replace(/^0/, '') };
  } else {
    return { ok: false, error: `${id}: expected {c, n} or {phone, parse_with_country_code}` };
  }
  if (phone.c.length < 1 || phone.c.length > 3) return { ok: false, error: `${id}: country code must be 1 to 3 digits` };
  if (phone.n.length < 4 || phone.n.length > 14) return { ok: false, error: `${id}: number must have 4 to 14 digits` };
  return { ok: true, value: phone };
}

function checkDate(id: string, value: unknown): CheckResult<DateValue> {
  if (!isRecord(value)) return { ok: false, error: `${id}: expected a date object {year, month, day, timezone?}, got ${typeName(value)}` };
  const { year, month, day, hour = 0, minute = 0, second = 0, timezone } = value as Record<string, unknown>;
  for (const [name, part] of Object.entries({ year, month, day, hour, minute, second })) {
    if (typeof part !== 'number' || !Number.isInteger(part)) return { ok: false, error: `${id}: ${name} must be an integer` };
  }
  const [y, mo, d, h, mi, s] = [year, month, day, hour, minute, second] as number[] as [number, number, number, number, number, number];
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  if (y < 1 || y > 9999 || date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d || h > 23 || mi > 59 || s > 59 || h < 0 || mi < 0 || s < 0) {
    return { ok: false, error: `${id}: the value is not a valid date` };
  }
  if (timezone !== undefined && (typeof timezone !== 'string' || timezone.length === 0 || timezone.length > 64)) {
    return { ok: false, error: `${id}: timezone must be a time zone name such as "Europe/Paris"` };
  }
  const normalised: DateValue = { year: y, month: mo, day: d };
  if ('hour' in value) normalised.hour = h;
  if ('minute' in value) normalised.minute = mi;
  if ('second' in value) normalised.second = s;
  if (typeof timezone === 'string') normalised.timezone = timezone;
  return { ok: true, value: normalised };
}

/** Integers are stored multiplied by 1,000 so that decimals survive: 2.5 → 2500. */
export const scaleInt = (value: number): number => Math.round(value * 1000);
export const unscaleInt = (stored: number): number => stored / 1000;

function checkByType(id: string, type: FieldType, value: unknown, custom: boolean, options: CheckOptions): CheckResult {
  switch (type) {
    case 'str': {
      // a custom multi-select field holds an array of its values
      if (custom && Array.isArray(value) && value.every((item) => typeof item === 'string' && item.length <= LIMITS.stringChars)) return { ok: true, value };
      if (typeof value !== 'string') return { ok: false, error: `${id}: expected a string, got ${typeName(value)}` };
      const max = custom ? LIMITS.textChars : LIMITS.stringChars;
      if (value.length > max) return { ok: false, error: `${id}: string of ${value.length} characters is longer than ${max}` };
      if (id === 'str::email' && value !== '' && !/^[^\s@]+@[^\s@]+$/.test(value)) return { ok: false, error: `${id}: the value is not an email address` };
      return { ok: true, value };
    }
    case 'int': {
      const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
      if (typeof number !== 'number' || !Number.isFinite(number)) return { ok: false, error: `${id}: expected a number, got ${typeName(value)}` };
      if (Math.abs(number) > LIMITS.maxInt) return { ok: false, error: `${id}: the number is out of range` };
      if (Math.abs(scaleInt(number) - number * 1000) > 1e-6 * Math.max(1, Math.abs(number))) {
        return { ok: false, error: `${id}: at most 3 decimal places are kept (integers are stored ×1000)` };
      }
      return { ok: true, value: number };
    }
    case 'bol':
      return typeof value === 'boolean' ? { ok: true, value } : { ok: false, error: `${id}: expected true or false, got ${typeName(value)}` };
    case 'geo': {
      if (!isRecord(value) || typeof value['name'] !== 'string' || value['name'].trim() === '') {
        return { ok: false, error: `${id}: expected a geo object {name: "…"}` };
      }
      if (value['name'].length > LIMITS.stringChars) return { ok: false, error: `${id}: name is longer than ${LIMITS.stringChars} characters` };
      return { ok: true, value: { name: value['name'] } };
    }
    case 'phn':
      return checkPhone(id, value, options);
    case 'dtz':
      return checkDate(id, value);
    case 'u4s':
      return Array.isArray(value) && value.every((item) => Number.isInteger(item))
        ? { ok: true, value }
        : { ok: false, error: `${id}: expected an array of integers` };
    case 'obj':
      return isRecord(value) ? { ok: true, value } : { ok: false, error: `${id}: expected a JSON object, got ${typeName(value)}` };
    case 'act':
      return { ok: false, error: `${id}: an activity is not a field value` };
  }
}

/**
 * Checks `value` against the type in `fieldId`. `null` is always allowed: it clears the field.
 * Returns the normalised value, or an error that names the field and says why.
 */
export function checkFieldValue(fieldId: string, value: unknown, options: CheckOptions = {}): CheckResult {
  const parts = parseFieldId(fieldId);
  if (!parts) return { ok: false, error: `${quoteId(fieldId)} is not a field ID of the form type:namespace:name` };
  if (value === null) return { ok: true, value: null };
  return checkByType(fieldId, parts.type, value, parts.custom, options);
}

/**
 * Checks every entry of a `fields` object. Field IDs must be of `kind`.
 * @returns the normalised object, or the list of errors (one per bad field).
 */
export function checkFields(
  fields: Record<string, unknown>,
  kind: 'person' | 'account',
  options: CheckOptions = {},
): CheckResult<Record<string, unknown>> & { errors?: string[] } {
  const out: Record<string, unknown> = {};
  const errors: string[] = [];
  for (const [id, value] of Object.entries(fields)) {
    const parts = parseFieldId(id === 'accounts_id' ? 'str:o:account_id' : id);
    if (!parts || parts.kind !== kind) {
      errors.push(`${quoteId(id)} is not a ${kind} field ID (expected ${kind === 'person' ? 'type::name or type:cm:name' : 'type:o:name or type:oc:name'})`);
      continue;
    }
    const result = checkFieldValue(id === 'accounts_id' ? 'str:o:account_id' : id, value, options);
    if (result.ok) out[id] = result.value;
    else errors.push(result.error);
  }
  return errors.length > 0 ? { ok: false, error: errors.join('; '), errors } : { ok: true, value: out };
}
