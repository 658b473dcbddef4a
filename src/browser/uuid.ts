/**
 * Random ids for items, anonymous visitors and queues.
 * @module
 */

/**
 * A random v4 UUID. `crypto.randomUUID` exists in secure contexts only; `getRandomValues`
 * exists everywhere, so plain-http pages build one from 16 random bytes.
 */
export function uuid(): string {
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  // Version 4 in the 7th byte, variant 10xx in the 9th (RFC 9562).
  bytes[6] = (bytes[6]! & 15) | 64;
  bytes[8] = (bytes[8]! & 63) | 128;
  const hex = Array.from(bytes, (byte) => (byte + 256).toString(16).slice(1)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
