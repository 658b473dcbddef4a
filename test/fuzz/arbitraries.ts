/**
 * fast-check generators of bad input, shared by the fuzz suites. Every generator here makes
 * input that is wrong by construction (the tests would catch a generator that drifts into
 * valid input: it would be forwarded and the "nothing forwarded" check fails).
 */
import fc from 'fast-check';

/** Printable ASCII: what node:http lets a client put in a header value. */
const headerChar = fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code));
export const headerText = (maxLength = 60) => fc.string({ unit: headerChar, maxLength });

/** Anything but a string. */
export const notString = () =>
  fc.oneof(
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.string(), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 2 }),
  );
/** Scalars and null. */
export const scalar = () => fc.oneof(fc.integer(), fc.double(), fc.string({ maxLength: 20 }), fc.boolean(), fc.constant(null));
/** Anything but a plain object: scalars, null, arrays. */
export const notObject = () => fc.oneof(scalar(), fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }));
/** Keys that are never field IDs (no `type:namespace:name`), the prototype's names first. */
export const badKey = () =>
  fc.oneof(
    fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'email', 'str:email', ''),
    fc.string({ maxLength: 12 }).filter((s) => !s.includes(':')),
  );

export const WRONG_CONTENT_TYPES = [
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'text/html',
  'application/xml',
  'image/png',
  'application/octet-stream',
  'application/json-patch+json',
  'text/plain-x',
  'json',
];

/** JSON text of an object with `key` mapped to the JSON text `value`, so `__proto__` stays an own key. */
const withKey = (base: Record<string, unknown>, key: string, value: unknown) => {
  const rest = JSON.stringify(base).slice(1, -1);
  return `{${rest}${rest ? ',' : ''}${JSON.stringify(key)}:${JSON.stringify(value)}}`;
};
const without = (base: Record<string, unknown>, key: string) => Object.fromEntries(Object.entries(base).filter(([k]) => k !== key));

/** Bodies that are never a /collect batch of site `key`: bytes, text, JSON of every kind, envelopes of the wrong types, truncations. */
export function garbageBody(key: string): fc.Arbitrary<string | Uint8Array> {
  const valid = JSON.stringify({ key, batch: [{ id: 'a', type: 'track', activity_id: 'act:cm:x', person: { 'str::email': 'a@example.com' } }] });
  return fc.oneof(
    fc.uint8Array({ maxLength: 600 }),
    fc.string({ maxLength: 300 }),
    fc.string({ unit: 'binary', maxLength: 200 }),
    fc.jsonValue({ maxDepth: 5 }).map((value) => JSON.stringify(value)),
    fc.record({ key: notString(), batch: fc.jsonValue({ maxDepth: 2 }) }).map((body) => JSON.stringify(body)),
    fc
      .record({ key: fc.constant(key), batch: fc.oneof(scalar(), fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 })) })
      .map((body) => JSON.stringify(body)),
    fc
      .record({ key: fc.constant(key), batch: fc.constant([]), identity: fc.oneof(fc.integer(), fc.boolean(), fc.object({ maxDepth: 1 })) })
      .map((body) => JSON.stringify(body)),
    fc
      .record({ key: fc.string({ minLength: 1, maxLength: 40 }).filter((k) => k !== key), batch: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }) })
      .map((body) => JSON.stringify(body)),
    fc.integer({ min: 0, max: valid.length - 1 }).map((cut) => valid.slice(0, cut)),
  );
}

const baseTrack = (id: string) => ({
  id,
  type: 'track',
  activity_id: 'act:cm:fuzz',
  attributes: { 'str:cm:plan': 'pro' },
  person: { 'str::email': 'ann@example.com' },
});
const baseIdentify = (id: string) => ({ id, type: 'identify', fields: { 'str::email': 'ann@example.com', 'str::first': 'Ann' }, tags: ['trial'] });
const itemId = fc.uuid();

/** JSON text of one /collect item that is wrong in one way, so the relay must reject it. */
export function brokenItem(): fc.Arbitrary<string> {
  const track = itemId.map(baseTrack);
  const identify = itemId.map(baseIdentify);
  const notIso = fc.string({ maxLength: 30 }).filter((s) => !/^\d{4}-\d{2}-\d{2}T/.test(s));
  return fc.oneof(
    // not an item at all
    fc
      .jsonValue({ maxDepth: 3 })
      .filter((v) => typeof v !== 'object' || v === null || Array.isArray(v) || !['track', 'identify'].includes((v as { type?: unknown }).type as string))
      .map((v) => JSON.stringify(v)),
    fc.tuple(track, fc.oneof(notString(), fc.constantFrom('TRACK', 'page', '', 'track ', '__proto__'))).map(([t, type]) => JSON.stringify({ ...t, type })),
    // track, one field wrong
    fc.tuple(track, notString()).map(([t, v]) => JSON.stringify({ ...t, activity_id: v })),
    fc
      .tuple(
        track,
        fc.oneof(
          fc.string({ maxLength: 20 }).filter((s) => !s.startsWith('act:')),
          fc.constantFrom('act:', 'act:cm:', 'str:cm:x', 'act::x', '__proto__'),
        ),
      )
      .map(([t, v]) => JSON.stringify({ ...t, activity_id: v })),
    fc.tuple(track, notObject()).map(([t, v]) => JSON.stringify({ ...t, attributes: v })),
    fc.tuple(track, notObject()).map(([t, v]) => JSON.stringify({ ...t, person: v })),
    fc.tuple(track, fc.oneof(notString(), fc.constant(''), fc.string({ minLength: 129, maxLength: 300 }))).map(([t, v]) => JSON.stringify({ ...t, id: v })),
    fc.tuple(track, notIso).map(([t, v]) => JSON.stringify({ ...t, ts: v })),
    fc.tuple(track, badKey(), fc.string({ maxLength: 10 })).map(([t, k, v]) => withKey(without(t, 'person'), 'person', JSON.parse(withKey({}, k, v)))),
    fc.tuple(track, fc.integer({ min: 17 * 1024, max: 200 * 1024 })).map(([t, n]) => JSON.stringify({ ...t, attributes: { 'str:cm:huge': 'x'.repeat(n) } })),
    fc
      .tuple(track, fc.integer({ min: 16, max: 40 }))
      .map(([t, n]) => JSON.stringify({ ...t, attributes: Object.fromEntries(Array.from({ length: n }, (_, i) => [`str:cm:a${i}`, 'v'])) })),
    track.map((t) => JSON.stringify(without(t, 'person'))),
    fc
      .tuple(track, fc.constantFrom('__proto__', 'constructor', 'prototype'), fc.jsonValue({ maxDepth: 1 }))
      .map(([t, k, v]) => withKey(without(t, 'attributes'), 'attributes', JSON.parse(withKey({ 'str:cm:plan': 'pro' }, k, v)))),
    // identify, one field wrong
    fc.tuple(identify, notObject()).map(([t, v]) => JSON.stringify({ ...t, fields: v })),
    fc
      .tuple(identify, badKey(), fc.oneof(fc.string({ maxLength: 10 }), fc.constant({ polluted: true })))
      .map(([t, k, v]) => withKey(without(t, 'fields'), 'fields', JSON.parse(withKey({ 'str::email': 'ann@example.com' }, k, v)))),
    fc.tuple(identify, fc.oneof(scalar(), fc.array(notString(), { minLength: 1, maxLength: 3 }))).map(([t, v]) => JSON.stringify({ ...t, tags: v })),
    fc
      .tuple(
        identify,
        fc.string({ maxLength: 70 }).filter((s) => !/^[0-9a-fA-F]{64}$/.test(s)),
      )
      .map(([t, v]) => JSON.stringify({ ...t, user_hash: v })),
    fc.tuple(identify, notObject()).map(([t, v]) => JSON.stringify({ ...t, location: v })),
    fc
      .tuple(identify, fc.integer({ min: 50, max: 3000 }))
      .map(([t, depth]) => `{"id":${JSON.stringify(t.id)},"type":"identify","fields":{"str::email":${'['.repeat(depth)}${']'.repeat(depth)}}}`),
  );
}

/** Origins (and non-origins) that are not `allowed`. */
export function foreignOrigin(allowed: string): fc.Arbitrary<string> {
  return fc
    .oneof(
      fc.webUrl().map((url) => new URL(url).origin),
      fc.webUrl(),
      headerText(),
      fc.domain().map((d) => `${allowed}.${d}`),
      fc.domain().map((d) => `https://${d}`),
    )
    .filter((origin) => origin !== allowed);
}

/**
 * Draws a few values from each generator so fast-check builds its lazy tables (webUrl and
 * domain alone cost ~80 MB once) before a suite takes its heap baseline.
 */
export function warmArbitraries(...arbitraries: fc.Arbitrary<unknown>[]): void {
  for (const arbitrary of arbitraries) fc.sample(arbitrary, { numRuns: 30, seed: 1 });
}
