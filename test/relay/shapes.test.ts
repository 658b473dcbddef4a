/**
 * An item's shape (what the platform could refuse it for, values aside) is the same whether it is
 * worked out from the item at ingest or from the entry the deliverer sent, whatever the order and
 * number of its keys: the site's closed guard lets an item through by the shapes the platform took.
 */
import { describe, expect, it } from 'vitest';
import { createShapes, entryShape, learnLeased, shapeOf } from '../../src/relay/ingest/shapes.js';
import { entryOf } from '../../src/relay/state/item-text.js';
import { createMemoryOutbox } from '../../src/relay/state/memory-outbox.js';
import type { OutboxItem } from '../../src/relay/state/outbox.js';
import type { CheckedItem } from '../../src/relay/ingest/items.js';

/** A taken entry as the deliverer hands it on: its stored text read back. */
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
  it('learned from each taken entry as it was stored: the shape of the item it was made from, whatever its keys and values hold', () => {
    const tricky = { 'str:cm:"q"': 'a "quoted" }, value\\', 'a\\b': { nested: ['x', { y: '}{"' }], n: null }, 'num:cm:é€😀': -1.5e3, '': true };
    const tracks = [
      track(tricky, { 'str::email': 'a@example.com' }),
      track({ z: [1, [2, { '}': '"' }]], a: false, '10': 'x', '2': {} }, undefined),
      track(undefined, { 'str::email': 'x"}\\', 'str::ei': '' }),
      track({ only: { a: 1, b: 2 } }, { ['__proto__']: 1, constructor: 'c' }),
    ];
    // One after another as a lease's entries come: the same ids again, then one id more or other.
    const alike = [{ 'str::email': 'a' }, { 'str::email': 'b' }, { 'str::email': 'c', 'str::ei': 'd' }, { 'str::ei': 'e' }, { 'str::email"': 'f' }];
    const items = [
      ...tracks,
      ...alike.map((person) => track({ 'str:cm:plan': 'pro' }, person)),
      ...alike.map((fields) => identify(fields)),
      identify(tricky),
      identify({ 'str::email': '\u2028\u0000"' }),
      identify({}),
    ];
    const site = 'site-a';
    const shapes = createShapes();
    const taken = items.map((item) => {
      const entry =
        item.type === 'identify'
          ? { fields: item.input.fields, tags: ['t"}'] }
          : {
              activity_id: item.input.activity_id,
              fields: item.input.person,
              attributes: item.input.attributes,
              created: '2026-11-29T00:00:00.000Z',
              location: { city: '{"' },
            };
      return { site, kind: item.type === 'identify' ? ('merge' as const) : ('activity' as const), text: JSON.stringify(entry) };
    });
    learnLeased(shapes, taken, 1_000);
    for (const item of items) expect(shapes.known(site, shapeOf(item), 1_001)).toBe(true);
    // Nothing else: a shape learned wrongly would leave one of the items above unknown, or know another.
    expect(shapes.known(site, shapeOf(track({ 'str:cm:"q"': 1 }, { 'str::email': 'a' })), 1_001)).toBe(false);
    expect(shapes.known(site, shapeOf(identify({ 'a\\b': 1 })), 1_001)).toBe(false);
    expect(shapes.known(site, shapeOf(track({ 'str:cm:plan': 'pro' }, { 'str::ei': 'a', 'str::email"': 'b' })), 1_001)).toBe(false);
    expect(shapes.known(site, shapeOf(track({ 'str:cm:plan"': 'pro' }, { 'str::email': 'a' })), 1_001)).toBe(false);
    // A text with white space in it (an earlier release's, or another writer's) is parsed: the same shapes.
    const spaced = createShapes();
    learnLeased(
      spaced,
      taken.map((one) => ({ ...one, text: JSON.stringify(JSON.parse(one.text), null, 1) })),
      1_000,
    );
    for (const item of items) expect(spaced.known(site, shapeOf(item), 1_001)).toBe(true);
    // Keys escaped by another writer are the keys they name.
    const escaped = createShapes();
    const text = '{"activity_id":"act:cm:bought","fi\\u0065lds":{"str::em\\u0061il":"a"},"\\u0061ttributes":{"x":1},"created":"c"}';
    learnLeased(escaped, [{ site, kind: 'activity', text }], 1_000);
    expect(escaped.known(site, shapeOf(track({ x: 1 }, { 'str::email': 'a' })), 1_001)).toBe(true);
  });
  it("the memory outbox's leased entries carry the shape of their text (the one before's when alike), and teach the same shapes as their text", async () => {
    const site = 'site-a';
    const entries: [OutboxItem['kind'], Record<string, unknown>][] = [
      ['activity', { activity_id: 'act:cm:bought', attributes: { z: 1, 'str:cm:"q"': { a: [1] }, '10': 'x' }, fields: { 'str::email': 'a"}' } }],
      ['activity', { activity_id: 'act:cm:seen', created: '2026-11-29T00:00:00.000Z' }],
      ['activity', { activity_id: 'act:cm:bought', attributes: { '10': 'y', z: 2, 'str:cm:"q"': 0 }, fields: { 'str::email': 'b' } }],
      ['activity', { activity_id: 'act:cm:bought', attributes: { z: 1 }, fields: { 'str::email': 'a"}' } }],
      ['merge', { fields: { 'str::ei': 'e', 'str::email': 'x', ['__proto__']: 1 }, tags: ['t'] }],
      ['merge', { fields: { ['__proto__']: 2, 'str::email': 'y', 'str::ei': 'f' } }],
      ['merge-create', { fields: {} }],
      ['activity', { activity_id: 'act:cm:seen', created: '2026-11-29T00:00:00.000Z' }],
    ];
    const items = entries.map(
      ([kind, entry], n): OutboxItem => ({ site, id: crypto.randomUUID(), kind, entry, browser: `b${n}`, visitor: `v${n}`, accepted: 0 }),
    );
    const outbox = createMemoryOutbox();
    expect((await outbox.accept(items, 0, 60_000)).accepted).toHaveLength(items.length);
    const leased = await outbox.lease('owner', 100, 0, 30_000);
    expect(leased).toHaveLength(items.length);
    for (const one of leased) expect(one.shape).toBe(entryShape({ kind: one.kind, entry: entryOf(one) }));
    const kept = createShapes();
    learnLeased(kept, leased, 1_000);
    const read = createShapes();
    learnLeased(
      read,
      leased.map(({ shape: _shape, ...one }) => one),
      1_000,
    );
    for (const item of items) {
      expect(kept.known(site, entryShape(item), 1_001)).toBe(true);
      expect(read.known(site, entryShape(item), 1_001)).toBe(true);
    }
  });
});
