/**
 * Identity: what the tracker remembers between page loads (stored under the key `meta`) and
 * how a queued item gets its person once the visitor identifies.
 * @module
 */
import type { Entry, Item, Meta } from './types.js';
import { uuid } from './uuid.js';

/** The 20 latest anonymous ids are enough to name every held item; older ones are forgotten. */
const KEPT_ANONYMOUS_IDS = 20;

/** `old` with `patch` applied; a missing anonymous id or queue id is made here, once. */
export function mergeMeta(old: Meta | undefined, patch?: Partial<Meta>): Meta {
  const people = Object.entries({ ...old?.m, ...patch?.m }).slice(-KEPT_ANONYMOUS_IDS);
  return { a: uuid(), q: uuid(), ...old, ...patch, m: Object.fromEntries(people) };
}

/**
 * `mine`, the meta a page kept in memory until consent, joined to `old`, the one earlier pages
 * stored: their ids win (the visitor's anonymous id and queue stay), and the page's entries and
 * person move to the stored anonymous id.
 */
export function joinMeta(mine: Meta, old: Meta | undefined, held: Map<string, { entry: Entry }>): Meta {
  const meta = mergeMeta(mine, old);
  for (const { entry } of held.values()) if (entry.a === mine.a) entry.a = meta.a;
  if (mine.m[mine.a]) meta.m[meta.a] = mine.m[mine.a]!;
  return meta;
}

/**
 * The changes that write `rows`, a page's memory store, to the device: `meta` through `join`
 * (given the stored value), then the others. Changes run in order, so the entries are written
 * once `join` gave them the joined anonymous id; what is still gathering goes with the queue's
 * next write.
 */
export const toDevice = (rows: [IDBValidKey, unknown][], join: (old: unknown) => Meta): [string, unknown][] =>
  rows.map(([row, value]) => [row as string, row === 'meta' ? join : () => value]);

/** A stored meta record, or `undefined` for anything else (nothing stored yet, corrupt). */
export const storedMeta = (value: unknown): Meta | undefined => ((value as Meta)?.a ? (value as Meta) : undefined);

/**
 * The item as sent: tracks made before identify get the person now. `undefined` = still held
 * (the visitor has not identified yet), `null` = orphaned by a `reset`.
 */
export function resolveItem({ item, a: anonymousId }: Entry, meta: Meta): Item | null | undefined {
  if (item.type !== 'track' || item.person) return item;
  const who = meta.m[anonymousId];
  if (who) return { ...item, person: who.p, user_hash: who.h };
  return anonymousId === meta.a ? undefined : null;
}
