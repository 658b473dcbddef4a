/**
 * Learned shapes: which unproven items the site's closed refusal guard lets through.
 *
 * The platform refuses an activity it has no definition for, an attribute the definition lacks,
 * or a person field it does not know, with a 400; 15 of those in 15 s shut the relay's key out.
 * Its API cannot list activity definitions (they can only be created, changed and archived), so
 * the relay cannot check an item against them before sending. What it can know is what the
 * platform took: a *shape* (an activity id with its set of attribute ids, or an identify's set of
 * field ids) that the platform accepted for a site within the last 10 minutes is known: the
 * deliverer teaches them as the platform takes a call's entries ({@link learnTaken}). Items the
 * tracking plan checked (`RELAY_PLAN`) are known too. While a site's refusal guard is closed,
 * unproven items of an unknown shape wait (guard.ts `heldByGuard`).
 * @module
 */
import type { SiteConfig } from '../core/sites.js';
import { entryOf } from '../state/item-text.js';
import type { Leased, OutboxItem } from '../state/outbox.js';
import type { CheckedItem } from './items.js';

/** How long a shape the platform took stays known. */
export const SHAPE_TTL_MS = 10 * 60_000;

/**
 * An object's own keys sorted and joined by NUL: `Object.keys(object).sort().join('\0')`, without a
 * list for none or one key (most of a track's objects: its person by one identifier, a few
 * attributes), as the deliverer works it out for every entry the platform takes.
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
function shapeFrom(activity: string | undefined, attributes: object | undefined, people: object | undefined): string {
  const person = sortedKeys(people);
  if (activity === undefined) return `merge\u0000${person}`;
  return `${activity}\u0000${sortedKeys(attributes)}\u0001${person}`;
}

/** The shape of an item as it goes to the platform: what the platform could refuse it for, values aside. */
export const shapeOf = (item: CheckedItem): string =>
  item.type === 'identify' ? shapeFrom(undefined, undefined, item.input.fields) : shapeFrom(item.input.activity_id, item.input.attributes, item.input.person);

/** The shape of an outbox entry: the same as {@link shapeOf} of the item it was made from (ingest/collect.ts `entryOf`). */
export function entryShape({ kind, entry }: Pick<OutboxItem, 'kind' | 'entry'>): string {
  const people = entry['fields'] as object | undefined;
  return kind === 'activity'
    ? shapeFrom(entry['activity_id'] as string, entry['attributes'] as object | undefined, people)
    : shapeFrom(undefined, undefined, people);
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const BACKSLASH = 0x5c;

/** Where the JSON string at `at` ends (one past its closing quote); throws on none. */
function stringEnd(text: string, at: number): number {
  for (let from = at + 1; ; ) {
    const quote = text.indexOf('"', from);
    if (quote < 0) throw new SyntaxError('unterminated string');
    let before = quote - 1;
    while (text.charCodeAt(before) === BACKSLASH) before--;
    if ((quote - 1 - before) % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** Where the JSON value at `at` ends: a string, an object or array (strings inside skipped), else a number or literal. */
function valueEnd(text: string, at: number): number {
  const first = text.charCodeAt(at);
  if (first === QUOTE) return stringEnd(text, at);
  let depth = 0;
  for (let i = at; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = stringEnd(text, i) - 1;
    else if (c === OPEN || c === 0x5b) depth++;
    else if (c === CLOSE || c === 0x5d || c === COMMA) {
      if (depth === 0) return i;
      if (c !== COMMA && --depth === 0) return i + 1;
    }
  }
  throw new SyntaxError('unterminated value');
}

/** Whether the string at `at`, ending at `end`, holds an escape. */
function escaped(text: string, at: number, end: number): boolean {
  for (let i = at + 1; i < end - 1; i++) if (text.charCodeAt(i) === BACKSLASH) return true;
  return false;
}

/**
 * The string at `at`, ending at `end`: `known` when it is written as `known` (no escape in either:
 * a JSON text holds no bare quote or control character), else sliced, or parsed when escaped. A
 * lease's entries mostly share their ids, so most are the last entry's, and nothing is allocated.
 */
function stringAt(text: string, at: number, end: number, known: string): string {
  if (end - at - 2 === known.length && text.startsWith(known, at + 1) && !known.includes('\\')) return known;
  return escaped(text, at, end) ? (JSON.parse(text.slice(at, end)) as string) : text.slice(at + 1, end - 1);
}

/** Whether the key at `at`, ending at `end`, is `name` as written (an escaped key is read apart). */
const keyIs = (text: string, at: number, end: number, name: string): boolean => end - at - 2 === name.length && text.startsWith(name, at + 1);

/**
 * The keys of the object at `at` as {@link sortedKeys} gives them, without the object (`known`: the
 * last entry's, for {@link stringAt}); undefined when it is not an object, or names a key twice.
 */
function keysAt(text: string, at: number, known: string): string | undefined {
  if (text.charCodeAt(at) !== OPEN) return undefined;
  if (text.charCodeAt(at + 1) === CLOSE) return '';
  let only: string | undefined;
  let keys: string[] | undefined;
  for (let i = at + 1; ; i++) {
    if (text.charCodeAt(i) !== QUOTE) return undefined;
    const end = stringEnd(text, i);
    const key = stringAt(text, i, end, known);
    if (only === undefined) only = key;
    else if (keys === undefined) keys = [only, key];
    else keys.push(key);
    if (text.charCodeAt(end) !== COLON) return undefined;
    i = valueEnd(text, end + 1);
    if (text.charCodeAt(i) === CLOSE) break;
    if (text.charCodeAt(i) !== COMMA) return undefined;
  }
  if (keys === undefined) return only;
  keys.sort();
  for (let k = 1; k < keys.length; k++) if (keys[k] === keys[k - 1]) return undefined;
  return keys.join('\u0000');
}

/** The last shape skimmed and its parts: the next entry's, most often (one lease's entries share few shapes). */
const last = { activity: '', attributes: '', people: '', shape: '', merge: '', mergeShape: 'merge\u0000' };

/**
 * The shape of an entry from its text as JSON.stringify wrote it, read without parsing it: its
 * activity id and the keys of its `attributes` and `fields`, no value. Undefined for any text it
 * does not read exactly as {@link entryShape} would (white space, an escaped top-level key, a key
 * twice, a value of another type).
 */
function skimmedShape(kind: Leased['kind'], text: string): string | undefined {
  if (text.charCodeAt(0) !== OPEN || text.charCodeAt(1) === CLOSE) return undefined;
  const activityKind = kind === 'activity';
  let activity: string | undefined;
  let attributes: string | undefined = '';
  let people: string | undefined = '';
  let i = 1;
  for (; ; i++) {
    if (text.charCodeAt(i) !== QUOTE) return undefined;
    const end = stringEnd(text, i);
    if (text.charCodeAt(end) !== COLON) return undefined;
    const at = end + 1;
    if (activityKind && keyIs(text, i, end, 'activity_id')) {
      if (text.charCodeAt(at) !== QUOTE) return undefined;
      i = stringEnd(text, at);
      activity = stringAt(text, at, i, last.activity);
    } else {
      if (keyIs(text, i, end, 'fields')) people = keysAt(text, at, activityKind ? last.people : last.merge);
      else if (activityKind && keyIs(text, i, end, 'attributes')) attributes = keysAt(text, at, last.attributes);
      // Another key, which may be one of those escaped: read apart.
      else if (escaped(text, i, end)) return undefined;
      if (people === undefined || attributes === undefined) return undefined;
      i = valueEnd(text, at);
    }
    if (text.charCodeAt(i) === CLOSE) break;
    if (text.charCodeAt(i) !== COMMA) return undefined;
  }
  if (i !== text.length - 1) return undefined;
  if (!activityKind) {
    if (people !== last.merge) [last.merge, last.mergeShape] = [people, `merge\u0000${people}`];
    return last.mergeShape;
  }
  if (activity === undefined) return undefined;
  if (activity !== last.activity || attributes !== last.attributes || people !== last.people)
    Object.assign(last, { activity, attributes, people, shape: `${activity}\u0000${attributes}\u0001${people}` });
  return last.shape;
}

/** The shape of a leased entry, as {@link entryShape} of its parsed entry: read from its text, parsed only when that cannot be read exactly. */
export function takenShape({ kind, text }: Pick<Leased, 'kind' | 'text'>): string {
  let shape: string | undefined;
  try {
    shape = skimmedShape(kind, text);
  } catch {
    shape = undefined;
  }
  return shape ?? entryShape({ kind, entry: entryOf({ text }) });
}

/** Learns the shapes of the entries the platform took (the deliverer's `onTaken`), per site. */
export function learnTaken(shapes: Shapes, entries: readonly Pick<Leased, 'site' | 'kind' | 'text'>[], now: number): void {
  const bySite = new Map<string, Set<string>>();
  for (const entry of entries) {
    const taken = bySite.get(entry.site) ?? new Set<string>();
    bySite.set(entry.site, taken.add(takenShape(entry)));
  }
  for (const [site, taken] of bySite) shapes.learn(site, taken, now);
}
/** Whether the site's own lists already vouch for every id the item names (the plan checked the activity and its attributes). */
function vouched(site: SiteConfig, item: CheckedItem): boolean {
  const people = item.type === 'identify' ? item.input.fields : (item.input.person ?? {});
  const fieldsKnown = Object.keys(people).length === 0 || site.fields !== undefined;
  if (item.type === 'identify') return fieldsKnown;
  return fieldsKnown && site.attributeRules !== undefined && site.activities?.has(item.input.activity_id) === true;
}

/** Whether `item` may pass the site's closed guard: vouched for by the site's plan, or a shape the platform took lately. */
export const isKnown = (shapes: Shapes, site: SiteConfig, item: CheckedItem, now: number): boolean =>
  vouched(site, item) || shapes.known(site.key, shapeOf(item), now);

export interface Shapes {
  known(site: string, shape: string, now: number): boolean;
  learn(site: string, shapes: Iterable<string>, now: number): void;
  /** Where the deliverer runs apart from ingest (Workers): asks what it learned about `shapes`, so `known` answers for them. */
  recall?(site: string, shapes: readonly string[], now: number): Promise<void>;
}

/** Known shapes in this process, at most `maxKeys` (least recently learned dropped first: forgetting only makes the relay more careful). */
export function createShapes(options: { ttlMs?: number; maxKeys?: number } = {}): Shapes {
  const ttlMs = options.ttlMs ?? SHAPE_TTL_MS;
  const maxKeys = options.maxKeys ?? 10_000;
  const until = new Map<string, number>();
  return {
    known: (site, shape, now) => (until.get(`${site}\u0002${shape}`) ?? 0) > now,
    learn(site, shapes, now) {
      for (const shape of shapes) {
        const key = `${site}\u0002${shape}`;
        until.delete(key);
        until.set(key, now + ttlMs);
        if (until.size > maxKeys) until.delete(until.keys().next().value as string);
      }
    },
  };
}
