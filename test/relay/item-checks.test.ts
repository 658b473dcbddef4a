/**
 * The item's envelope check takes a plain item without running its schema (ingest/items.ts
 * `plainlyValid`), and the entry's check a plain activity without the spec's (`plainActivity`):
 * neither may take what its schema refuses, and an item taken goes on as the schema gives it.
 */
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import type { SiteConfig } from '../../src/relay/core/sites.js';
import { activityEvent } from '../../src/api/schemas/definitions.js';
import { ACTIVITY_KEYS, checkEntry, checkItem, itemSchemas, plainActivity, plainlyValid } from '../../src/relay/ingest/items.js';

const HASH = 'a'.repeat(64);
const site = {} as SiteConfig;

const track = {
  id: 'i1',
  type: 'track',
  ts: '2026-11-22T10:00:00.000Z',
  activity_id: 'act:cm:bench',
  attributes: { 'str:cm:plan': 'pro' },
  person: { 'str::email': 'a@b.co' },
};
const identify = { id: 'i2', type: 'identify', ts: '2026-11-22T10:00:00Z', fields: { 'str::email': 'a@b.co' }, tags: ['vip'], unset_tags: ['old'] };

/** Each base item with one key changed (undefined: removed). */
const variants: Record<string, unknown>[] = [];
const values: unknown[] = [
  undefined,
  null,
  '',
  'x',
  'x'.repeat(128),
  'x'.repeat(129),
  0,
  1.5,
  true,
  [],
  ['a'],
  [1],
  {},
  { a: 1 },
  '2026-11-22',
  '2026-11-22T10:00:00',
  '2026-11-22 10:00:00+01:00',
  '2026-13-22T10:00:00Z',
  HASH,
  HASH.toUpperCase(),
  `${HASH}0`,
  'g'.repeat(64),
  { 'str::email': HASH },
  { 'str::email': 'short' },
];
for (const base of [track, identify]) {
  variants.push(base);
  for (const key of ['id', 'ts', 'location', 'activity_id', 'attributes', 'person', 'fields', 'tags', 'unset_tags', 'user_hash', 'extra']) {
    for (const value of values) {
      const item: Record<string, unknown> = { ...base };
      if (value === undefined) delete item[key];
      else item[key] = value;
      variants.push(item);
    }
  }
}

describe('the plain item check', () => {
  it('takes only what the schema takes, and the item as the schema gives it', () => {
    let taken = 0;
    for (const raw of variants) {
      const type = raw['type'] as 'identify' | 'track';
      const parsed = v.safeParse(itemSchemas[type], raw);
      if (plainlyValid(raw, type)) {
        taken++;
        expect(parsed.success, JSON.stringify(raw)).toBe(true);
        expect(parsed.output).toEqual(raw);
      }
      // checkItem answers as the schema does, whichever way it went.
      const checked = checkItem(raw, 0, site);
      expect(checked.ok, JSON.stringify(raw)).toBe(parsed.success);
      if (checked.ok) expect(checked.item.input).toEqual(parsed.output);
    }
    // The common items do not go through the schema.
    expect(plainlyValid(track, 'track')).toBe(true);
    expect(plainlyValid(identify, 'identify')).toBe(true);
    expect(taken).toBeGreaterThan(50);
  });

  it('sends what it does not take to the schema, which says what is wrong', () => {
    const item = { ...track, id: '', ts: 'yesterday' };
    expect(plainlyValid(item, 'track')).toBe(false);
    expect(checkItem(item, 3, site)).toEqual({
      ok: false,
      id: '',
      error: 'id must not be empty; ts must be an ISO 8601 time such as 2026-11-22T10:00:00.000Z',
      reason: 'invalid',
    });
    // A hash per field is the schema's to judge.
    const perField = { ...track, user_hash: { 'str::email': HASH } };
    expect(plainlyValid(perField, 'track')).toBe(false);
    expect(checkItem(perField, 0, site)).toMatchObject({ ok: true });
  });
});

const activity = { activity_id: 'act:cm:bench', fields: { 'str::email': 'a@b.co' }, attributes: { 'str:cm:plan': 'pro' }, created: '2026-11-22T10:00:00.000Z' };
const located = { ...activity, created: 1_764_000_000_000, location: { source_ip: '10.0.0.1', custom: { city_name: 'Lyon', lat: 45.7 } } };
const entryValues: unknown[] = [
  ...values,
  'act:cm:other',
  'str::email',
  'act:o:x',
  -1,
  2 ** 53,
  { 'str::email': 'a@b.co', 'str::ei': 'x' },
  { 'str::email': 5 },
  { 'bad id': 'x' },
  Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`str:cm:a${i}`, i])),
  Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`str:cm:a${i}`, i])),
  { 'str:cm:long': 'é'.repeat(5_000) },
  { 'str:cm:long': 'x'.repeat(17_000) },
  { source_ip: 'x'.repeat(46) },
  { custom: { lat: 91 } },
  { address: { address: '' } },
];

describe('the plain activity check', () => {
  it('takes only what the spec takes', () => {
    let taken = 0;
    for (const base of [activity, located]) {
      for (const key of [...ACTIVITY_KEYS, 'person_id', 'extra']) {
        for (const value of entryValues) {
          const entry: Record<string, unknown> = { ...base };
          if (value === undefined) delete entry[key];
          else entry[key] = value;
          const accepted = v.safeParse(activityEvent, entry).success;
          if (plainActivity(entry)) {
            taken++;
            expect(accepted, JSON.stringify(entry).slice(0, 200)).toBe(true);
          }
          expect(checkEntry('track', entry) === undefined, JSON.stringify(entry).slice(0, 200)).toBe(accepted);
        }
      }
    }
    expect(plainActivity(activity)).toBe(true);
    expect(plainActivity(located)).toBe(true);
    expect(taken).toBeGreaterThan(50);
  });

  it('is looked at again when the spec changes its activity', () => {
    // plainActivity checks each of these rules itself: a key or a rule added to the spec's
    // activityEvent (src/api/schemas/definitions.ts) must be added there too, or it lets through what the spec refuses.
    const [object, ...checks] = activityEvent.pipe;
    expect(Object.keys(object.entries)).toEqual(['activity_id', 'fields', 'person_id', 'attributes', 'location', 'created']);
    expect(checks.map((check) => check.type)).toEqual(['check', 'check']);
  });
});
