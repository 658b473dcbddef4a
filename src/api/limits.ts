/** The platform's documented limits (docs/platform.md, "Limits it enforces"). */
export const LIMITS = {
  /** people, accounts or activities per request */
  itemsPerRequest: 100,
  /** bytes of one request body (2 MB) */
  payloadBytes: 2 * 1024 * 1024,
  /** bytes of one activity event (16 kB) */
  activityBytes: 16 * 1024,
  attributesPerActivity: 15,
  eventsPerActivityPerPersonPerDay: 50,
  /** records per archive, restore or delete call */
  recordsPerBatch: 100,
  peoplePerAccount: 3_000,
  customFieldsPerInstance: 100,
  /** field IDs in one `person/get-by-ids` request */
  fieldIdsPerRequest: 150,
  mergeByPeople: 3,
  mergeByAccounts: 2,
  page: { min: 1, max: 500, default: 50 },
  stringChars: 255,
  textChars: 4_000,
  maxInt: 9_000_000_000_000,
} as const;

/** Requests per second by plan (docs/platform.md). */
export const RATE_LIMITS = { professional: 10, business: 30 } as const;
export type Plan = keyof typeof RATE_LIMITS;

/** UTF-8 length of `text` without encoding it (what TextEncoder would give, lone surrogates as U+FFFD). */
export function utf8Length(text: string): number {
  // ASCII is the common case: one byte per character.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range is the point of this test
  if (/^[\x00-\x7f]*$/.test(text)) return text.length;
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    if (code < 0x800) bytes += 1;
    else if (code >= 0xd800 && code <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 2; // a surrogate pair: 4 bytes for 2 UTF-16 units
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/** Bytes of `value` as UTF-8 JSON: how the platform measures payloads. */
export function jsonBytes(value: unknown): number {
  // Counted, not encoded: this runs once per activity in hot paths (the relay, the emulator).
  return utf8Length(JSON.stringify(value) ?? '');
}
