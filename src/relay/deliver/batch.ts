/**
 * Leased entries into platform calls: `person/merge` calls first (many people in one call, one
 * call per merge strategy and `merge_by`, one person's merges in accepted order across calls),
 * then `activities/create` calls, each of at most 100 entries and 2 MB. Each entry goes in as the
 * text the outbox stored it as (state/item-text.ts); a call's body is the envelope around them.
 * @module
 */
import { identifierKey, LIMITS } from '../../api/index.js';
import { utf8Length } from '../../api/limits.js';
import { entryOf } from '../state/item-text.js';
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
  /** every entry proves its person (breaker.ts lets such calls go longer) */
  proven: boolean;
}

/** What planning needs to know of the sites. */
export interface CallPlanning {
  /** a site's `merge_by` */
  mergeBy(site: string): readonly string[];
  /** whether the entry proves its person: a verified identify, or a track where only verified ones are forwarded */
  proven(entry: Leased): boolean;
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
 * The `merge_by` fields and values a merge names (`field\0value`): the platform finds its person by
 * them, each value as it compares it (an email in two cases names one person).
 */
export function namedBy(entry: Leased, mergeBy: readonly string[]): string[] {
  // Parsed here, for merges only: activities go as their text.
  const fields = (entryOf(entry)['fields'] ?? {}) as Record<string, unknown>;
  return mergeBy.flatMap((field) => {
    const value = fields[field];
    const key = typeof value === 'string' ? identifierKey(field, value) : '';
    return key === '' ? [] : [`${field}\u0000${key}`];
  });
}

/**
 * The people a merge names, as `merge_by` field and value (and its browser): two merges sharing
 * one are taken to be of one person and must apply in the order they were accepted.
 */
export function peopleOf(entry: Leased, mergeBy: readonly string[]): string[] {
  return [...namedBy(entry, mergeBy), `browser\u0000${entry.site}\u0000${entry.browser}`];
}

/**
 * `leased` (oldest first) with the activities taken a round of browsers at a time: every
 * browser's first activity of the lease, then every one's second, and so on, each browser's in
 * the order they were accepted (merges keep their places). A browser with a backlog (a flood, a
 * backfill) then fills the later calls while one with a new item goes in the first, instead of
 * behind the whole backlog: in the last call, the one a backlog holds back to fill (lease-run.ts).
 */
function byRound(leased: readonly Leased[]): Leased[] {
  const seen = new Map<string, number>();
  const round = leased.map((entry) => {
    if (entry.kind !== 'activity') return 0;
    const browser = `${entry.site}\u0000${entry.browser}`;
    const n = seen.get(browser) ?? 0;
    seen.set(browser, n + 1);
    return n;
  });
  return leased
    .map((_, i) => i)
    .sort((a, b) => round[a]! - round[b]! || a - b)
    .map((i) => leased[i]!);
}

/**
 * Groups `leased` (oldest first) into calls, merges before activities; merges in the order they
 * were accepted, activities a round of browsers at a time ({@link byRound}: each browser's in the
 * order they were accepted, across calls and within each). A call holds one kind, one `merge_by`, and proven entries only or
 * none (breaker.ts: refusals drawn by anonymous items do not hold the proven ones); a merge call waits for those in flight naming one of its people (scheduler.ts), they go in the order given here, and a merge never goes in a
 * call before one holding an earlier merge of its person (a verified and an unverified identify
 * of one person, strategies 2 and 3, apply in accepted order).
 */
export function planCalls(leased: readonly Leased[], sites: CallPlanning, maxEntries = LIMITS.itemsPerRequest): Call[] {
  const merges: (Call & { key: string; bytes: number })[] = [];
  const activities = new Map<string, (Call & { key: string; bytes: number })[]>();
  /** per person: the index in `merges` of the last call holding one of its merges */
  const lastCallOf = new Map<string, number>();
  const fits = (call: { entries: Leased[]; bytes: number }, size: number) =>
    call.entries.length < maxEntries && call.bytes + size <= LIMITS.payloadBytes - ENVELOPE_BYTES;
  // `merge` may change the person (strategy 2); `merge-create` never changes an existing one (3).
  const open = (kind: EntryKind, by: readonly string[], proven: boolean, key: string) => ({
    ...platformCall(kind, by),
    proven,
    key,
    bytes: 0,
    entries: [],
    texts: [],
  });
  /** each site's `merge_by` as a call's key names it, joined once per lease */
  const joined = new Map<readonly string[], string>();
  for (const entry of byRound(leased)) {
    const by = sites.mergeBy(entry.site);
    const proven = sites.proven(entry);
    let byKey = joined.get(by);
    if (byKey === undefined) {
      byKey = by.join(',');
      joined.set(by, byKey);
    }
    const key = `${entry.kind}\u0000${proven}\u0000${byKey}`;
    const text = entry.text;
    const size = utf8Length(text) + 1;
    let call: Call & { key: string; bytes: number };
    if (entry.kind === 'activity') {
      const calls = activities.get(key) ?? activities.set(key, []).get(key)!;
      const last = calls[calls.length - 1];
      call = last !== undefined && fits(last, size) ? last : calls[calls.push(open(entry.kind, by, proven, key)) - 1]!;
    } else {
      // The first call of its kind at or after the last one holding a merge of its person.
      const people = peopleOf(entry, by);
      const from = Math.max(0, ...people.map((person) => lastCallOf.get(person) ?? 0));
      let index = merges.findIndex((candidate, i) => i >= from && candidate.key === key && fits(candidate, size));
      if (index < 0) index = merges.push(open(entry.kind, by, proven, key)) - 1;
      call = merges[index]!;
      for (const person of people) lastCallOf.set(person, index);
    }
    call.entries.push(entry);
    call.texts.push(text);
    call.bytes += size;
  }
  return [...merges, ...[...activities.values()].flat()].map(({ endpoint, envelope, entries, texts, proven }) => ({
    endpoint,
    envelope,
    entries,
    texts,
    proven,
  }));
}

/** The call cut into consecutive parts of at most `size` entries each. */
export function parts(call: Call, size: number): Call[] {
  const cut: Call[] = [];
  for (let from = 0; from < call.entries.length; from += size) {
    cut.push({ ...call, entries: call.entries.slice(from, from + size), texts: call.texts.slice(from, from + size) });
  }
  return cut;
}

/** The call with only the entries `keep` chooses (a browser's tracks held back, leases lost). */
export function only(call: Call, keep: (entry: Leased) => boolean): Call {
  const kept = call.entries.map(keep);
  return { ...call, entries: call.entries.filter((_, i) => kept[i]), texts: call.texts.filter((_, i) => kept[i]) };
}
