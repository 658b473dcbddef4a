/**
 * An item's shape as the platform could refuse it (ingest/shapes.ts): its activity id, its
 * attribute ids and its person's field ids, values aside. Here, below ingest, as the memory outbox
 * works out each entry's shape when it accepts it (state/memory-ready.ts `stored`).
 * @module
 */
import type { OutboxItem } from './outbox.js';

/**
 * An object's own keys sorted and joined by NUL: `Object.keys(object).sort().join('\0')`, without a
 * list for none or one key (most of a track's objects: its person by one identifier, a few
 * attributes), as it is worked out for every entry accepted.
 */
function sortedKeys(object: object | undefined): string {
  let only: string | undefined;
  for (const key in object) {
    if (!Object.hasOwn(object, key)) continue;
    if (only !== undefined) return Object.keys(object).sort().join('\u0000');
    only = key;
  }
  return only ?? '';
}

/** A shape from what the platform could refuse: an activity id (none for an identify), its attribute ids, the person's field ids. */
export const shapeFrom = (activity: string | undefined, attributes: object | undefined, people: object | undefined): string =>
  joined(activity, activity === undefined ? '' : sortedKeys(attributes), sortedKeys(people));

const joined = (activity: string | undefined, attributes: string, person: string) =>
  activity === undefined ? `merge\u0000${person}` : `${activity}\u0000${attributes}\u0001${person}`;

/** The shape of an outbox entry: the same as ingest/shapes.ts `shapeOf` of the item it was made from (ingest/collect.ts `entryOf`). */
export function entryShape({ kind, entry }: Pick<OutboxItem, 'kind' | 'entry'>): string {
  const people = entry['fields'] as object | undefined;
  return kind === 'activity'
    ? shapeFrom(entry['activity_id'] as string, entry['attributes'] as object | undefined, people)
    : shapeFrom(undefined, undefined, people);
}

/**
 * {@link entryShape} that answers the string it answered last when an entry's activity and keys are
 * the same (most entries in a row): no string is made for it, and where the shapes are learned
 * (a `Set`, a `Map`) its hash is worked out once, not once an entry.
 */
export function entryShapes(): (item: Pick<OutboxItem, 'kind' | 'entry'>) => string {
  let last = { activity: undefined as string | undefined, attributes: '', person: '', shape: '' };
  return ({ kind, entry }) => {
    const activity = kind === 'activity' ? (entry['activity_id'] as string) : undefined;
    const attributes = activity === undefined ? '' : sortedKeys(entry['attributes'] as object | undefined);
    const person = sortedKeys(entry['fields'] as object | undefined);
    if (last.shape === '' || activity !== last.activity || attributes !== last.attributes || person !== last.person)
      last = { activity, attributes, person, shape: joined(activity, attributes, person) };
    return last.shape;
  };
}
