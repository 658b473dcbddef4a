/**
 * The item's envelope check takes a plain item without running its schema (ingest/items.ts
 * `plainlyValid`): it must never take what the schema refuses, and an item it takes goes on as
 * the schema would have given it.
 */
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import type { SiteConfig } from '../../src/relay/core/sites.js';
import { checkItem, itemSchemas, plainlyValid } from '../../src/relay/ingest/items.js';

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
