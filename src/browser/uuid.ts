/**
 * Random ids for items, anonymous visitors and queues.
 * @module
 */

/**
 * A random v4 UUID. `crypto.randomUUID` exists in secure contexts only; `getRandomValues`
 * exists everywhere, so plain-http pages fill the template's digits with random ones: each `0`
 * gets 4 random bits, the `8` becomes the variant (8 to b), the `4` stays the version.
 */
export const uuid = (): string =>
  crypto.randomUUID?.() ??
  '10000000-1000-4000-8000-100000000000'.replace(/[018]/g, (digit) =>
    (+digit ^ (crypto.getRandomValues(new Uint8Array(1))[0]! & (15 >> (+digit / 4)))).toString(16),
  );
