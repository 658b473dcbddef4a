/**
 * Known shapes on Workers (ingest/shapes.ts), kept next to each site's refusal bucket in the
 * `RelayState` objects (refusals.ts): the outbox objects deliver in their alarms, apart from the
 * isolates that answer /collect, so what the platform took is taught to the site's object
 * ({@link teachShapes}, from the engine's `onTaken`) and asked by ingest only while the site's
 * guard is closed ({@link durableShapes} `recall`, one call per request with shapes the isolate
 * does not know). An outbox object teaches a shape again only once half its lifetime has passed,
 * so delivery costs a call only for shapes new to that object. The rows: shape-rows.ts.
 * @module
 */
import type { DurableObjectNamespace } from '@cloudflare/workers-types/index.ts';
import { refusalKey, siteKey } from '../core/limits.js';
import { createShapes, entryShape, SHAPE_TTL_MS, type Shapes } from '../ingest/shapes.js';
import type { OutboxItem } from '../state/outbox.js';
import { REFUSAL_OBJECTS } from './refusals.js';
import { hash, type RelayState } from './state.js';

/** How long an isolate remembers that the site's object did not know a shape: a closed guard's requests ask about once a second. */
export const UNKNOWN_CACHE_MS = 1_000;

/** The object that holds `site`'s refusal bucket, and its shapes. */
const objectOf = (namespace: DurableObjectNamespace<RelayState>, site: string) =>
  namespace.get(namespace.idFromName(`refusals#${hash(refusalKey(siteKey(site))) % REFUSAL_OBJECTS}`));

/** What an outbox object told the sites' objects lately, per isolate and namespace. */
const taughtBy = new WeakMap<object, Shapes>();

/** Tells the sites' objects the shapes of `entries`, which the platform took: those this isolate has not told them in the last half of a shape's lifetime. */
export async function teachShapes(
  namespace: DurableObjectNamespace<RelayState>,
  entries: readonly Pick<OutboxItem, 'site' | 'kind' | 'entry'>[],
  now: number,
): Promise<void> {
  const taught = taughtBy.get(namespace) ?? createShapes({ ttlMs: SHAPE_TTL_MS / 2 });
  taughtBy.set(namespace, taught);
  const bySite = new Map<string, Set<string>>();
  for (const entry of entries) {
    const shape = entryShape(entry);
    if (!taught.known(entry.site, shape, now)) bySite.set(entry.site, (bySite.get(entry.site) ?? new Set<string>()).add(shape));
  }
  await Promise.all(
    [...bySite].map(async ([site, shapes]) => {
      await objectOf(namespace, site).learnShapes(site, [...shapes], now + SHAPE_TTL_MS, now);
      taught.learn(site, shapes, now);
    }),
  );
}

/**
 * Ingest's shapes on Workers: what this isolate knows, and `recall` to ask the site's object about
 * the rest (what the platform took from any outbox object). A shape the object did not know is not
 * asked again for {@link UNKNOWN_CACHE_MS}.
 */
export function durableShapes(namespace: DurableObjectNamespace<RelayState>): Shapes {
  const here = createShapes();
  // Shapes the object did not know, as known shapes are kept: each for a while, at most so many.
  const unknown = createShapes({ ttlMs: UNKNOWN_CACHE_MS });
  return {
    known: here.known,
    learn: here.learn,
    async recall(site, shapes, now) {
      const asked = shapes.filter((shape) => !here.known(site, shape, now) && !unknown.known(site, shape, now));
      if (asked.length === 0) return;
      const known = (await objectOf(namespace, site).knownShapes(site, asked, now)) as [string, number][];
      // Known here until the object's own `until`: learning counts the lifetime from the time given.
      for (const [shape, until] of known) here.learn(site, [shape], until - SHAPE_TTL_MS);
      const found = new Set(known.map(([shape]) => shape));
      unknown.learn(
        site,
        asked.filter((shape) => !found.has(shape)),
        now,
      );
    },
  };
}
