/**
 * Calls that end: entries sent again after an ambiguous answer (a `person/merge` answered 5xx or
 * not in time, or activities under `RELAY_AMBIGUOUS=resend`). The outbox counts each entry's
 * started sends (`attempts`, kept when such an entry goes back as `tried`), and the count decides:
 * - tried once: it goes again in its call as planned, {@link retryWait} later;
 * - tried twice or more: it goes apart from the entries never in doubt, cut as a refused call is
 *   (halving.ts): in parts of about √n entries, then (tried three times) alone, so one entry that
 *   makes the platform fail holds back only itself;
 * - tried {@link MAX_TRIES} times: a dead letter `unanswered: <the last failure>`, for an operator.
 * Meanwhile, within its lease, only merges naming the same people (or from the same browser) wait
 * for it (scheduler.ts); the rest of the lease goes on.
 * @module
 */
import { type Call, only, parts, peopleOf } from './batch.js';
import { partSize } from './halving.js';
import type { Leased } from '../state/outbox.js';

/** Sends of one entry whose outcome stays unknown, at most: the last one's failure makes it a dead letter. */
export const MAX_TRIES = 5;
/** The longest wait before an entry in doubt goes again. */
const MAX_WAIT_MS = 60_000;

/** How long an entry tried `tries` times waits before it goes again: `base` (the ambiguous retry wait), tripled per try. */
export const retryWait = (tries: number, base: number): number => Math.min(MAX_WAIT_MS, base * 3 ** Math.max(0, tries - 1));

/** The dead-letter reason of an entry whose sends stayed in doubt {@link MAX_TRIES} times. */
export const unanswered = (message: string): string => `unanswered: ${message} (${MAX_TRIES} tries)`;

/**
 * `call` with its entries tried twice or more taken out, in parts first (about √n of them, or
 * single entries once one was tried three times), then the rest as it was planned. The parts go
 * before the rest: they were accepted earlier than any later merge of their people in it.
 */
export function cutDoubted(call: Call): Call[] {
  const doubted = (entry: Leased) => entry.attempts >= 2;
  if (!call.entries.some(doubted)) return [call];
  const apart = only(call, doubted);
  const tries = Math.max(...apart.entries.map((entry) => entry.attempts));
  const rest = only(call, (entry) => !doubted(entry));
  return [...parts(apart, partSize(apart.entries.length, tries - 2)), ...(rest.entries.length > 0 ? [rest] : [])];
}

/** The people (and browsers) whose merges wait in a lease for a merge of theirs in doubt. */
export interface Doubts {
  /** Adds the people of `entries`. */
  add(entries: readonly Leased[]): void;
  /** Whether `entry` names one of them (then it waits, and its people with it). */
  names(entry: Leased): boolean;
}

export function createDoubts(mergeBy: (site: string) => readonly string[]): Doubts {
  const people = new Set<string>();
  const of = (entry: Leased) => peopleOf(entry, mergeBy(entry.site));
  return {
    add(entries) {
      for (const entry of entries) for (const person of of(entry)) people.add(person);
    },
    names: (entry) => people.size > 0 && of(entry).some((person) => people.has(person)),
  };
}
