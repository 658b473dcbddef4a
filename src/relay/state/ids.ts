/**
 * Remembered ids in 16 bytes each, whatever the browser sent: a UUID (any case, with or without
 * dashes) is its own 16 bytes; any other id is the first 16 bytes of its SHA-256 (a collision
 * between two ids of one site needs about 2^64 of them). Every store keys its dedupe memory with
 * this, so memory, SQLite and Redis agree on which ids are the same.
 * @module
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { toHex } from '../core/encoding.js';

const encoder = new TextEncoder();

/** The value of a hex digit's character code, or -1 (ASCII only, either case: what `/[0-9a-f]/i` matches). */
function digit(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  const lower = code | 32;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
}

/**
 * Writes `id`'s 16 bytes into `bytes` from `to` when it is a UUID (`/^[0-9a-f]{8}-?[0-9a-f]{4}-?
 * [0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i`: any case, each of its four dashes optional), read
 * straight from its digits in one pass that also checks them: no regular expression run first (at
 * /collect saturation that test and a second walk of the digits were 2% of the memory-store relay).
 * False when it is not one (`bytes` then holds part of it: the caller writes the id's hash over it).
 */
function uuidInto(id: string, bytes: Uint8Array | number[], to: number): boolean {
  const length = id.length;
  if (length < 32 || length > 36) return false;
  let at = 0;
  for (let byte = 0; byte < 16; byte++) {
    // A dash may come after the 4th, 6th, 8th and 10th byte's digits.
    if ((byte === 4 || byte === 6 || byte === 8 || byte === 10) && id.charCodeAt(at) === 45) at++;
    const high = digit(id.charCodeAt(at));
    const low = digit(id.charCodeAt(at + 1));
    if (high < 0 || low < 0) return false;
    bytes[to + byte] = (high << 4) | low;
    at += 2;
  }
  return at === length;
}

/** The 16 bytes an id is remembered by. */
export function compactId(id: string): Uint8Array {
  const bytes = new Uint8Array(16);
  return uuidInto(id, bytes, 0) ? bytes : sha256(encoder.encode(id)).subarray(0, 16);
}

/**
 * Writes the 16 bytes an id is remembered by into `bytes` from `to`: a UUID's straight from its
 * digits, no array or string made for it (the SQL outbox binds a transaction's ids so, as one blob).
 */
export function writeCompactId(id: string, bytes: Uint8Array, to: number): void {
  if (!uuidInto(id, bytes, to)) bytes.set(compactId(id), to);
}

/** One id's char codes at a time: {@link compactIdString} runs for every item the Redis outbox accepts. */
const codes: number[] = new Array<number>(16).fill(0);
/** Where {@link compactIdHex} checks an id is a UUID (the bytes are not kept). */
const hexCheck = new Uint8Array(16);

/**
 * The same 16 bytes as a 16-character binary string (one char per byte): a Map key, a Redis key
 * part. A UUID's bytes go straight into one shared list of codes (no byte array, no iterator of
 * a spread); `apply` reads a list without iterating it.
 */
export function compactIdString(id: string): string {
  if (!uuidInto(id, codes, 0)) {
    const bytes = compactId(id);
    for (let i = 0; i < 16; i++) codes[i] = bytes[i]!;
  }
  return String.fromCharCode.apply(null, codes);
}

/**
 * The same 16 bytes as 32 hex digits in upper case, as SQLite's hex() answers them: a UUID's own
 * digits without its dashes (no bytes made and written out again: this runs for every item the SQL
 * outbox accepts).
 */
export function compactIdHex(id: string): string {
  return uuidInto(id, hexCheck, 0) ? id.replaceAll('-', '').toUpperCase() : toHex(compactId(id)).toUpperCase();
}
