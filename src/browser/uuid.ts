/**
 * Ids for items, anonymous visitors and queues.
 * @module
 */

/** Where the dashes go: after the 4th, 6th, 8th and 10th byte. */
const DASH_BEFORE = [4, 6, 8, 10];

/**
 * A version 7 UUID (RFC 9562): the first 48 bits are the time in milliseconds, the other 74 are
 * random. Ids made close in time sort close together, so the relay's dedupe table (a B-tree)
 * takes each new one next to the last instead of somewhere in the middle: for its SQLite store
 * that is several times less work per item than random (v4) ids. `getRandomValues` exists in
 * every context, secure or not.
 */
export function uuid(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let time = Date.now();
  for (let index = 5; index >= 0; index--) {
    bytes[index] = time; // a Uint8Array keeps the low 8 bits of the whole part
    time /= 256;
  }
  bytes[6] = (bytes[6]! & 0x0f) | 0x70; // version 7
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // variant 10
  return Array.from(bytes, (byte, index) => (DASH_BEFORE.includes(index) ? '-' : '') + (byte | 256).toString(16).slice(1)).join('');
}
