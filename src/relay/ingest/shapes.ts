/**
 * Learned shapes: which unproven items the site's closed refusal guard lets through.
 *
 * The platform refuses an activity it has no definition for, an attribute the definition lacks,
 * or a person field it does not know, with a 400; 15 of those in 15 s shut the relay's key out.
 * Its API cannot list activity definitions (they can only be created, changed and archived), so
 * the relay cannot check an item against them before sending. What it can know is what the
 * platform took: a *shape* (an activity id with its set of attribute ids, or an identify's set of
 * field ids) that the platform accepted for a site within the last 10 minutes is known: the
 * deliverer teaches them as the platform takes a call's entries ({@link learnLeased}). Items the
 * tracking plan checked (`RELAY_PLAN`) are known too. While a site's refusal guard is closed,
 * unproven items of an unknown shape wait (guard.ts `heldByGuard`).
 * @module
 */
import type { SiteConfig } from '../core/sites.js';
import { entryShape, shapeFrom } from '../state/entry-shape.js';
import { entryOf } from '../state/item-text.js';
import type { Leased } from '../state/outbox.js';
import type { CheckedItem } from './items.js';

/** How long a shape the platform took stays known. */
export const SHAPE_TTL_MS = 10 * 60_000;

export { entryShape };

/** The shape of an item as it goes to the platform: what the platform could refuse it for, values aside. */
export const shapeOf = (item: CheckedItem): string =>
  item.type === 'identify' ? shapeFrom(undefined, undefined, item.input.fields) : shapeFrom(item.input.activity_id, item.input.attributes, item.input.person);

/**
 * Learns the shapes of the entries the platform took (the deliverer's `onTaken`), per site: each by
 * the shape its store kept (the memory outbox's), or else by its text, parsed.
 */
export function learnLeased(shapes: Shapes, leased: readonly Pick<Leased, 'site' | 'kind' | 'text' | 'shape'>[], now: number): void {
  const bySite = new Map<string, Set<string>>();
  for (const one of leased) {
    const taken = bySite.get(one.site) ?? new Set<string>();
    bySite.set(one.site, taken.add(one.shape ?? entryShape({ kind: one.kind, entry: entryOf(one) })));
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
