/** The platform's documented limits (spec "Limits" and upstream-facts "Payload limits"). */
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

/** Requests per second by plan (upstream-facts). */
export const RATE_LIMITS = { professional: 10, business: 30 } as const;
export type Plan = keyof typeof RATE_LIMITS;

const encoder = new TextEncoder();

/** Bytes of `value` as UTF-8 JSON: how the platform measures payloads. */
export function jsonBytes(value: unknown): number {
  // One shared encoder: this runs once per activity in hot paths (the relay, the emulator).
  return encoder.encode(JSON.stringify(value)).byteLength;
}
