/**
 * Remembered ids in 16 bytes each, whatever the browser sent: a UUID (any case, with or without
 * dashes) is its own 16 bytes; any other id is the first 16 bytes of its SHA-256 (a collision
 * between two ids of one site needs about 2^64 of them). Every store keys its dedupe memory with
 * this, so memory, SQLite and Redis agree on which ids are the same.
 * @module
 */
import { sha256 } from '@noble/hashes/sha2.js';

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const encoder = new TextEncoder();

/** The 16 bytes an id is remembered by. */
export function compactId(id: string): Uint8Array {
  if (UUID.test(id)) {
    const hex = id.replaceAll('-', '');
    const bytes = new Uint8Array(16);
    for (let i = 0; i < 16; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
    return bytes;
  }
  return sha256(encoder.encode(id)).subarray(0, 16);
}

/** The same 16 bytes as a 16-character binary string (one char per byte): a Map key, a Redis key part. */
export function compactIdString(id: string): string {
  return String.fromCharCode(...compactId(id));
}
