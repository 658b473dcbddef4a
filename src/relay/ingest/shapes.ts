/**
 * Learned shapes, and the gate for items of unknown shape.
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
 *
 * Where a hand-off waits for the platform (`Handoff.waitsForPlatform`), items of an unknown shape
 * are a bet on the key, so each visitor has at most one request with unknown shapes in flight per
 * relay process: the rest wait (within their budget) for it. A visitor sending many concurrent
 * requests of known shapes is never held back.
 * @module
 */
import type { SiteConfig } from '../core/sites.js';
import type { OutboxItem } from '../state/outbox.js';
import type { CheckedItem } from './items.js';

/** How long a shape the platform took stays known. */
export const SHAPE_TTL_MS = 10 * 60_000;

/** A shape from what the platform could refuse: an activity id (none for an identify), its attribute ids, the person's field ids. */
function shapeFrom(activity: string | undefined, attributes: object | undefined, people: object | undefined): string {
  const person = Object.keys(people ?? {})
    .sort()
    .join('\u0000');
  if (activity === undefined) return `merge\u0000${person}`;
  return `${activity}\u0000${Object.keys(attributes ?? {})
    .sort()
    .join('\u0000')}\u0001${person}`;
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

/** Learns the shapes of the entries the platform took (the deliverer's `onTaken`), per site. */
export function learnTaken(shapes: Shapes, entries: readonly Pick<OutboxItem, 'site' | 'kind' | 'entry'>[], now: number): void {
  const bySite = new Map<string, Set<string>>();
  for (const entry of entries) {
    const taken = bySite.get(entry.site) ?? new Set<string>();
    bySite.set(entry.site, taken.add(entryShape(entry)));
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

/** Whether `item` may go without the visitor's gate: vouched for by the site's plan, or a shape the platform took lately. */
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

/** One request with unknown shapes in flight per visitor. */
export interface VisitorGate {
  /**
   * Resolves to a release function once `risky()` is false (no gate needed: a no-op) or this
   * request holds the visitor's gate; to undefined when `deadline` (ms since epoch) passed first.
   */
  enter(visitor: string, risky: () => boolean, deadline: number, now: () => number): Promise<(() => void) | undefined>;
}

export function createVisitorGate(): VisitorGate {
  const held = new Map<string, Promise<void>>();
  const none = () => {};
  return {
    async enter(visitor, risky, deadline, now) {
      for (;;) {
        if (!risky()) return none;
        const busy = held.get(visitor);
        if (busy === undefined) {
          let open = none;
          held.set(
            visitor,
            new Promise<void>((resolve) => {
              open = resolve;
            }),
          );
          return () => {
            held.delete(visitor);
            open();
          };
        }
        const left = deadline - now();
        if (left <= 0) return undefined;
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([busy, new Promise((resolve) => (timer = setTimeout(resolve, left)))]);
        clearTimeout(timer);
      }
    },
  };
}
