/**
 * Bytes as text for tokens, hashes and ETags: one home for the relay's hex and base64url.
 * @module
 */

/** Each byte's two lower-case hex digits. */
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/** Lower-case hex, two digits per byte. */
export function toHex(bytes: Uint8Array): string {
  // Concatenated from a table: it runs for every id the outbox remembers and every hash checked.
  let hex = '';
  for (const byte of bytes) hex += HEX[byte]!;
  return hex;
}

/** base64url without padding (RFC 4648 §5). */
export const toBase64url = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
