/**
 * Bytes as text for tokens, hashes and ETags: one home for the relay's hex and base64url.
 * @module
 */

/** Lower-case hex, two digits per byte. */
export const toHex = (bytes: Uint8Array): string => Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');

/** base64url without padding (RFC 4648 §5). */
export const toBase64url = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
