/**
 * Remembered ids in 16 bytes each, whatever the browser sent: a UUID (any case, with or without
 * dashes) is its own 16 bytes; any other id is the first 16 bytes of its SHA-256 (a collision
 * between two ids of one site needs about 2^64 of them). Every store keys its dedupe memory with
 * this, so memory, SQLite and Redis agree on which ids are the same.
 * @module
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { toHex } from '../core/encoding.js';

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const encoder = new TextEncoder();

/** The value of a hex digit's character code (UUID has checked it is one). */
const digit = (code: number): number => (code <= 57 ? code - 48 : (code | 32) - 87);

/** Writes a UUID's 16 bytes into `bytes` from `to` (UUID has checked it is one), read straight from its digits, dashes skipped. */
function uuidBytes(id: string, bytes: Uint8Array | number[], to = 0): void {
  let at = 0;
  for (let i = to; i < to + 16; i++) {
    if (id.charCodeAt(at) === 45) at++;
    bytes[i] = (digit(id.charCodeAt(at)) << 4) | digit(id.charCodeAt(at + 1));
    at += 2;
  }
}

/** The 16 bytes an id is remembered by. */
export function compactId(id: string): Uint8Array {
  if (UUID.test(id)) {
    const bytes = new Uint8Array(16);
    uuidBytes(id, bytes);
    return bytes;
  }
  return sha256(encoder.encode(id)).subarray(0, 16);
}

/**
 * Writes the 16 bytes an id is remembered by into `bytes` from `to`: a UUID's straight from its
 * digits, no array or string made for it (the SQL outbox binds a transaction's ids so, as one blob).
 */
export function writeCompactId(id: string, bytes: Uint8Array, to: number): void {
  if (UUID.test(id)) uuidBytes(id, bytes, to);
  else bytes.set(compactId(id), to);
}

/** One id's char codes at a time: {@link compactIdString} runs for every item the memory and Redis outboxes accept. */
const codes: number[] = new Array<number>(16).fill(0);

/**
 * The same 16 bytes as a 16-character binary string (one char per byte): a Map key, a Redis key
 * part. A UUID's bytes go straight into one shared list of codes (no byte array, no iterator of
 * a spread); `apply` reads a list without iterating it.
 */
export function compactIdString(id: string): string {
  if (UUID.test(id)) uuidBytes(id, codes);
  else {
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
  return UUID.test(id) ? id.replaceAll('-', '').toUpperCase() : toHex(compactId(id)).toUpperCase();
}
