/**
 * An item's shape (what the platform could refuse it for, values aside) is the same whether it is
 * worked out from the item at ingest or from the entry the deliverer sent, whatever the order and
 * number of its keys: the site's closed guard lets an item through by the shapes the platform took.
 */
import { describe, expect, it } from 'vitest';
import { entryShape, shapeOf } from '../../src/relay/ingest/shapes.js';
import type { CheckedItem } from '../../src/relay/ingest/items.js';

const track = (attributes: Record<string, unknown> | undefined, person: Record<string, unknown> | undefined): CheckedItem => ({
  index: 0,
  id: 't',
  type: 'track',
  input: { id: 't', type: 'track', activity_id: 'act:cm:bought', ...(attributes ? { attributes } : {}), ...(person ? { person } : {}) },
});
const identify = (fields: Record<string, unknown>): CheckedItem => ({ index: 0, id: 'i', type: 'identify', input: { id: 'i', type: 'identify', fields } });
/** The shape as first written: every key list sorted and joined. */
const sorted = (object: object | undefined) =>
  Object.keys(object ?? {})
    .sort()
    .join('\u0000');

describe('shapes', () => {
  const objects = [undefined, {}, { 'str:cm:plan': 'pro' }, { 'num:cm:total': 1, 'str:cm:plan': 'pro' }, { z: 1, a: 2, m: 3, '10': 4, '2': 5 }];
  it('a track: its activity, its attributes in order, its person in order, from the item and from its entry alike', () => {
    for (const attributes of objects)
      for (const person of objects) {
        const expected = `act:cm:bought\u0000${sorted(attributes)}\u0001${sorted(person)}`;
        expect(shapeOf(track(attributes, person))).toBe(expected);
        const entry: Record<string, unknown> = { activity_id: 'act:cm:bought' };
        if (attributes) entry['attributes'] = attributes;
        if (person) entry['fields'] = person;
        expect(entryShape({ kind: 'activity', entry })).toBe(expected);
      }
  });
  it('an identify: its fields in order, the same whatever order they were sent in', () => {
    for (const fields of objects.filter((object) => object !== undefined)) {
      expect(shapeOf(identify(fields))).toBe(`merge\u0000${sorted(fields)}`);
      expect(entryShape({ kind: 'merge', entry: { fields } })).toBe(`merge\u0000${sorted(fields)}`);
    }
    expect(shapeOf(identify({ 'str::ei': 'x', 'str::email': 'y' }))).toBe(shapeOf(identify({ 'str::email': 'y', 'str::ei': 'x' })));
  });
});
