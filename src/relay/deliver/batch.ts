/**
 * Leased entries into platform calls: `person/merge` calls first (many people in one call, one
 * call per merge strategy and `merge_by`), then `activities/create` calls, each of at most 100
 * entries and 2 MB. Each entry is serialised once; a call's body is the envelope around them.
 * @module
 */
import { LIMITS } from '../../api/index.js';
import { utf8Length } from '../../api/limits.js';
import type { EntryKind, Leased } from '../state/outbox.js';

export type CallEndpoint = 'person/merge' | 'activities/create';

/**
 * The platform call of a kind, everything but its entries. `merge-create` is merge strategy 3
 * ("ignore"): a person no identifier matches is created, an existing one is not changed at all.
 */
export function platformCall(kind: EntryKind, mergeBy: readonly string[]): { endpoint: CallEndpoint; envelope: Record<string, unknown> } {
  if (kind === 'activity') return { endpoint: 'activities/create', envelope: { merge_by: [...mergeBy] } };
  return { endpoint: 'person/merge', envelope: { merge_by: [...mergeBy], merge_strategy: kind === 'merge' ? 2 : 3 } };
}

/** One platform call of the deliverer. */
export interface Call {
  endpoint: CallEndpoint;
  /** everything but the entries: `merge_by`, `merge_strategy` */
  envelope: Record<string, unknown>;
  entries: Leased[];
  /** each entry as JSON, in `entries` order */
  texts: string[];
}

/** Room kept in each call for the envelope around the entries. */
const ENVELOPE_BYTES = 4 * 1024;

/** The call's JSON body. */
export function bodyOf(call: Pick<Call, 'endpoint' | 'envelope' | 'texts'>): string {
  const key = call.endpoint === 'person/merge' ? 'people' : 'activities';
  const envelope = JSON.stringify(call.envelope);
  return `${envelope.slice(0, -1)}${envelope.length > 2 ? ',' : ''}"${key}":[${call.texts.join(',')}]}`;
}

/**
 * Groups `leased` (oldest first) into calls, merges before activities, each group in the order
 * its entries were accepted. `mergeBy` gives a site's `merge_by`.
 */
export function planCalls(leased: readonly Leased[], mergeBy: (site: string) => readonly string[], maxEntries = LIMITS.itemsPerRequest): Call[] {
  const groups = new Map<string, { endpoint: CallEndpoint; envelope: Record<string, unknown>; entries: Leased[]; texts: string[] }>();
  for (const entry of leased) {
    const by = mergeBy(entry.site);
    const key = `${entry.kind}\u0000${by.join(',')}`;
    let group = groups.get(key);
    if (group === undefined) {
      // `merge` may change the person (strategy 2); `merge-create` never changes an existing one (3).
      group = { ...platformCall(entry.kind, by), entries: [], texts: [] };
      groups.set(key, group);
    }
    group.entries.push(entry);
    group.texts.push(JSON.stringify(entry.entry));
  }
  const calls: Call[] = [];
  const ordered = [...groups.values()].sort((a, b) => (a.endpoint === b.endpoint ? 0 : a.endpoint === 'person/merge' ? -1 : 1));
  for (const group of ordered) {
    let call: Call | undefined;
    let bytes = 0;
    group.entries.forEach((entry, index) => {
      const text = group.texts[index]!;
      const size = utf8Length(text) + 1;
      if (call === undefined || call.entries.length >= maxEntries || bytes + size > LIMITS.payloadBytes - ENVELOPE_BYTES) {
        call = { endpoint: group.endpoint, envelope: group.envelope, entries: [], texts: [] };
        calls.push(call);
        bytes = 0;
      }
      call.entries.push(entry);
      call.texts.push(text);
      bytes += size;
    });
  }
  return calls;
}

/** The call cut into consecutive parts of at most `size` entries each. */
export function parts(call: Call, size: number): Call[] {
  const cut: Call[] = [];
  for (let from = 0; from < call.entries.length; from += size) {
    cut.push({ endpoint: call.endpoint, envelope: call.envelope, entries: call.entries.slice(from, from + size), texts: call.texts.slice(from, from + size) });
  }
  return cut;
}

/** The call with only the entries `keep` chooses (a browser's tracks held back, leases lost). */
export function only(call: Call, keep: (entry: Leased) => boolean): Call {
  const kept = call.entries.map(keep);
  return { ...call, entries: call.entries.filter((_, i) => kept[i]), texts: call.texts.filter((_, i) => kept[i]) };
}
