/**
 * An outbox item as the SQL and Redis stores keep it: JSON, serialised once when accepted, with
 * its platform entry last. A lease then parses only the few short fields before the entry (site,
 * kind, browser, …) and hands the entry on as the text it was stored as, which goes in the
 * platform call as it is (deliver/batch.ts): the entry is never parsed or serialised again on its
 * way to the platform. Only a merge's `fields` are read from it (batch.ts `namedBy`).
 *
 * Rows written by earlier releases hold the entry before `browser`, `visitor` and `accepted`
 * (`JSON.stringify` of the item as ingest built it): a lease parses those whole, as it always did.
 * @module
 */
import type { Leased, OutboxItem } from './outbox.js';

/** Where the entry begins: in a JSON text a `"` inside a string is always escaped, so `,"` is never inside one. */
const ENTRY_KEY = ',"entry":';

/** The item as stored: its fields in one order, the entry last. */
export const itemText = (item: OutboxItem): string =>
  JSON.stringify({ site: item.site, id: item.id, kind: item.kind, browser: item.browser, visitor: item.visitor, accepted: item.accepted, entry: item.entry });

/** The fields before the entry (`text` up to {@link ENTRY_KEY}), when they are all there: an earlier release's row has its entry before some of them. */
function headOf(text: string): Omit<OutboxItem, 'entry'> | undefined {
  try {
    const head = JSON.parse(`${text}}`) as Partial<OutboxItem>;
    return typeof head.accepted === 'number' && typeof head.visitor === 'string' && typeof head.browser === 'string'
      ? (head as Omit<OutboxItem, 'entry'>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One copy of each string it is given: a lease's entries share their site, and a browser's entries
 * their browser and visitor. Each entry's parse makes its own copy of them, which would live as long
 * as the lease (long enough to be promoted to V8's old generation); this keeps the first and lets
 * the others die young. One per lease, so it holds nothing past it.
 */
export function sharedStrings(): (text: string) => string {
  const seen = new Map<string, string>();
  return (text) => {
    const known = seen.get(text);
    if (known !== undefined) return known;
    seen.set(text, text);
    return text;
  };
}

/**
 * A stored item (any release's text) as leased: its entry as JSON, the text it was stored as when
 * the entry is last; its site, browser and visitor through `share` (the lease's {@link sharedStrings}).
 */
export function leasedOf(text: string, seq: number, attempts: number, share: (text: string) => string = (same) => same): Leased {
  const at = text.indexOf(ENTRY_KEY);
  const head = at < 0 ? undefined : headOf(text.slice(0, at));
  if (head !== undefined) {
    const { id, kind, accepted } = head;
    const site = share(head.site);
    const browser = share(head.browser);
    const visitor = share(head.visitor);
    return { site, id, kind, browser, visitor, accepted, text: text.slice(at + ENTRY_KEY.length, -1), seq, attempts };
  }
  const { site, id, kind, browser, visitor, accepted, entry } = JSON.parse(text) as OutboxItem;
  return { site, id, kind, browser, visitor, accepted, text: JSON.stringify(entry), seq, attempts };
}

/** A leased entry's platform entry, parsed: only where its fields are needed (a merge's people, the shapes the platform took). */
export const entryOf = (leased: Pick<Leased, 'text'>): Record<string, unknown> => JSON.parse(leased.text) as Record<string, unknown>;

/** Leased entries' sites, kinds and platform entries, parsed (ingest/shapes.ts learns from them the shapes the platform took). */
export const withEntries = (leased: readonly Leased[]): Pick<OutboxItem, 'site' | 'kind' | 'entry'>[] =>
  leased.map((one) => ({ site: one.site, kind: one.kind, entry: entryOf(one) }));
