/**
 * Ids for items, anonymous visitors and queues.
 * @module
 */

/**
 * The random part of a v4 UUID, after its version digit (`xxx-Vxxx-xxxxxxxxxxxx`).
 * `crypto.randomUUID` exists in secure contexts only; `getRandomValues` exists everywhere, so
 * plain-http pages fill the template's digits with random ones: each `0` gets 4 random bits, the
 * `8` becomes the variant (8 to b).
 */
const randomTail = (): string =>
  crypto.randomUUID?.().slice(15) ??
  '000-8000-000000000000'.replace(/[08]/g, (digit) => (+digit ^ (crypto.getRandomValues(new Uint8Array(1))[0]! & (15 >> (+digit / 4)))).toString(16));

/**
 * A version 7 UUID (RFC 9562): the first 48 bits are the time in milliseconds, the other 74 are
 * random. Ids made close in time sort close together, so the relay's dedupe table (a B-tree)
 * takes each new one next to the last instead of somewhere in the middle: for its SQLite store
 * that is several times less work per item than random (v4) ids. The random part is a v4 UUID's
 * (the browser's own, fast generator) after its version digit.
 */
export function uuid(): string {
  // 11 hex digits until the year 2527.
  const time = '0' + Date.now().toString(16);
  return `${time.slice(0, 8)}-${time.slice(8)}-7${randomTail()}`;
}
