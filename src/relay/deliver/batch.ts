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
import { RUN } from '../state/fair.js';
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

/**
 * The call's JSON body, made by one join: the envelope and the brackets go in the first and last
 * of its parts, so the body is one flat string, not the entries' join inside a concatenation (a
 * rope that is copied flat again when it is written to the socket).
 */
export function bodyOf(call: Pick<Call, 'endpoint' | 'envelope' | 'texts'>): string {
  const key = call.endpoint === 'person/merge' ? 'people' : 'activities';
  const envelope = JSON.stringify(call.envelope);
  const head = `${envelope.slice(0, -1)}${envelope.length > 2 ? ',' : ''}"${key}":[`;
  if (call.texts.length === 0) return `${head}]}`;
  const parts = call.texts.slice();
  parts[0] = head + parts[0];
  parts[parts.length - 1] += ']}';
  return parts.join(',');
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
 * browser's first run of activities of the lease (up to state/fair.ts `RUN`, as the outbox's
 * turns take them), then every one's second, and so on, each browser's in the order they were
 * accepted (merges keep their places). A browser with a backlog (a flood, a backfill) then fills
 * the later calls while one with a new item goes in the first, instead of behind the whole
 * backlog: in the last call, the one a backlog holds back to fill (lease-run.ts). A run, not one
 * entry: a browser's entries lie together in the outbox, so a call of whole runs settles a tenth
 * as many of its pages. Each round's entries in a list of its own, in lease order: no key string
 * or sort per entry.
 */
function byRound(leased: readonly Leased[]): Leased[] {
  /** per site, per browser: its activities seen so far */
  const seen = new Map<string, Map<string, number>>();
  const rounds: Leased[][] = [[]];
  for (const entry of leased) {
    let round = 0;
    if (entry.kind === 'activity') {
      let browsers = seen.get(entry.site);
      if (browsers === undefined) {
        browsers = new Map();
        seen.set(entry.site, browsers);
      }
      const before = browsers.get(entry.browser) ?? 0;
      browsers.set(entry.browser, before + 1);
      round = Math.floor(before / RUN);
    }
    if (round === rounds.length) rounds.push([]);
    rounds[round]!.push(entry);
  }
  return rounds.length === 1 ? rounds[0]! : rounds.flat();
}

/** A call being filled. */
interface Open extends Call {
  /** at least its entries' UTF-8 bytes, and the commas between them: three a UTF-16 unit */
  most: number;
  /** its entries' UTF-8 bytes, and the commas between them, once counted: only when {@link Open.most} could pass the limit */
  bytes: number | undefined;
  /** the calls of its kind, `merge_by` and proof */
  group: Open[];
}

/** The bytes of a call's entries at most, the envelope aside. */
const ROOM = LIMITS.payloadBytes - ENVELOPE_BYTES;

/** Whether `text` fits in `call` beside its entries. Counted in UTF-8 only when three bytes a UTF-16 unit could pass the limit. */
function fits(call: Open, text: string, maxEntries: number): boolean {
  if (call.entries.length >= maxEntries) return false;
  if (call.most + 3 * text.length + 1 <= ROOM) return true;
  call.bytes ??= call.texts.reduce((bytes, known) => bytes + utf8Length(known) + 1, 0);
  return call.bytes + utf8Length(text) + 1 <= ROOM;
}

function add(call: Open, entry: Leased): void {
  call.entries.push(entry);
  call.texts.push(entry.text);
  call.most += 3 * entry.text.length + 1;
  if (call.bytes !== undefined) call.bytes += utf8Length(entry.text) + 1;
}

/** A lease's calls of one kind, `merge_by` and proof (batch.ts planCalls). */
type Kinds = Record<EntryKind, [unproven: Open[], proven: Open[]]>;

/**
 * Groups `leased` (oldest first) into calls, merges before activities; merges in the order they
 * were accepted, activities a round of browsers at a time ({@link byRound}: each browser's in the
 * order they were accepted, across calls and within each). A call holds one kind, one `merge_by`, and proven entries only or
 * none (breaker.ts: refusals drawn by anonymous items do not hold the proven ones); a merge call waits for those in flight naming one of its people (scheduler.ts), they go in the order given here, and a merge never goes in a
 * call before one holding an earlier merge of its person (a verified and an unverified identify
 * of one person, strategies 2 and 3, apply in accepted order).
 */
export function planCalls(leased: readonly Leased[], sites: CallPlanning, maxEntries = LIMITS.itemsPerRequest): Call[] {
  const merges: Open[] = [];
  /** activities' calls, each kind, `merge_by` and proof's in a list of its own, the lists in the order they began */
  const activities: Open[][] = [];
  /** per person: the index in `merges` of the last call holding one of its merges */
  const lastCallOf = new Map<string, number>();
  // `merge` may change the person (strategy 2); `merge-create` never changes an existing one (3).
  const open = (kind: EntryKind, by: readonly string[], proven: boolean, group: Open[]): Open => {
    const call: Open = { ...platformCall(kind, by), proven, entries: [], texts: [], most: 0, bytes: undefined, group };
    group.push(call);
    return call;
  };
  /** each `merge_by` (each site's list, and each list of the same fields) and its calls by kind and proof */
  const byList = new Map<readonly string[], Kinds>();
  const byFields = new Map<string, Kinds>();
  const kindsOf = (by: readonly string[]): Kinds => {
    let kinds = byList.get(by);
    if (kinds === undefined) {
      const fields = by.join(',');
      kinds = byFields.get(fields);
      if (kinds === undefined) {
        kinds = { activity: [[], []], merge: [[], []], 'merge-create': [[], []] };
        byFields.set(fields, kinds);
      }
      byList.set(by, kinds);
    }
    return kinds;
  };
  for (const entry of byRound(leased)) {
    const by = sites.mergeBy(entry.site);
    const proven = sites.proven(entry);
    const calls = kindsOf(by)[entry.kind][proven ? 1 : 0];
    if (entry.kind === 'activity') {
      if (calls.length === 0) activities.push(calls);
      const last = calls[calls.length - 1];
      add(last !== undefined && fits(last, entry.text, maxEntries) ? last : open(entry.kind, by, proven, calls), entry);
    } else {
      // The first call of its kind at or after the last one holding a merge of its person.
      const people = peopleOf(entry, by);
      const from = Math.max(0, ...people.map((person) => lastCallOf.get(person) ?? 0));
      let index = merges.findIndex((candidate, i) => i >= from && candidate.group === calls && fits(candidate, entry.text, maxEntries));
      if (index < 0) index = merges.push(open(entry.kind, by, proven, calls)) - 1;
      add(merges[index]!, entry);
      for (const person of people) lastCallOf.set(person, index);
    }
  }
  return [...merges, ...activities.flat()].map(({ endpoint, envelope, entries, texts, proven }) => ({
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
