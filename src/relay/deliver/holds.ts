/**
 * Partial calls held back in a backlog (lease-run.ts): a call that is not full waits for the next
 * lease, where it fills, but none of its entries waits so more than {@link HOLD_MS} in all. Kept
 * by the deliverer across leases and rounds: when each held entry was first held back, and the
 * people whose merges wait in a held merge call, so that no later merge of theirs passes it.
 * @module
 */
import type { Leased } from '../state/outbox.js';

/** The longest an entry is held back to fill a call: then its call goes as it is. */
export const HOLD_MS = 2_000;
/** An entry held this long ago and not seen since went in a call, or to another deliverer: forgotten. */
const FORGET_MS = 10 * HOLD_MS;

/** A merge entry and the people it names (`merge_by` keys, batch.ts `namedBy`). */
export interface Naming {
  seq: number;
  people: readonly string[];
}

export interface Holds {
  /** Whether the call of `entries` may wait for the next lease at `now` (and counts it as waiting); false once one of them has waited {@link HOLD_MS}. */
  mayHold(entries: readonly Leased[], now: number): boolean;
  /** The merges `held` wait for a later lease: a later merge of a person they name must wait for them. */
  holdPeople(held: readonly Naming[], now: number): void;
  /**
   * Of the merges of a lease (`merges`; `leased`: every entry leased with them), those that must
   * wait: an older merge of a person they name is held back and not in this lease.
   */
  behind(merges: readonly Naming[], leased: readonly { seq: number }[], now: number): Set<number>;
}

export function createHolds(): Holds {
  /** per entry (its seq): when it was first held back */
  const since = new Map<number, number>();
  /** per person: the oldest of their merges held back, and when */
  const people = new Map<string, { seq: number; at: number }>();
  return {
    mayHold(entries, now) {
      for (const [seq, at] of since) if (at <= now - FORGET_MS) since.delete(seq);
      if (entries.some((entry) => (since.get(entry.seq) ?? now) <= now - HOLD_MS)) {
        for (const entry of entries) since.delete(entry.seq);
        return false;
      }
      for (const entry of entries) if (!since.has(entry.seq)) since.set(entry.seq, now);
      return true;
    },
    holdPeople(held, now) {
      for (const { seq, people: named } of held)
        for (const person of named) {
          const known = people.get(person);
          if (known === undefined || known.seq > seq) people.set(person, { seq, at: now });
        }
    },
    behind(merges, leased, now) {
      const waiting = new Set<number>();
      // Nothing held back (the usual case): the lease's seqs are not even gathered.
      if (people.size === 0) return waiting;
      const seqs = new Set(leased.map((entry) => entry.seq));
      for (const [person, held] of people) {
        // Back in this lease (planned in order with the later ones), or gone elsewhere long ago.
        if (seqs.has(held.seq) || held.at <= now - FORGET_MS) people.delete(person);
      }
      for (const { seq, people: named } of merges) if (named.some((person) => (people.get(person)?.seq ?? seq) < seq)) waiting.add(seq);
      return waiting;
    },
  };
}
