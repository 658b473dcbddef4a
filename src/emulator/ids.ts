/** Record IDs as the platform forms them: 24 hex digits, people starting `00`, accounts `10`. */

let counter = Math.floor(Math.random() * 0xffffff);

const hex = (value: number, width: number) => (value >>> 0).toString(16).padStart(width, '0').slice(-width);

function randomHex(width: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(Math.ceil(width / 2)));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0'))
    .join('')
    .slice(0, width);
}

/** A new 24-hex ID: prefix, seconds, random, counter (unique within a process, like an ObjectId). */
export function newId(prefix: '00' | '10', nowMs: number): string {
  counter = (counter + 1) % 0x1000000;
  return prefix + hex(Math.floor(nowMs / 1000), 8) + randomHex(8) + hex(counter, 6);
}

/** The cursor answered past the last page. */
export const END_CURSOR = '0'.repeat(24);

export const isHexId = (value: unknown): value is string => typeof value === 'string' && /^[0-9a-f]{24}$/i.test(value);
