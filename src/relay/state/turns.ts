/**
 * Merge turns per person, kept by a pacer that several deliverers share (the key's pacer object
 * on Workers, where each outbox object delivers its own browsers). A `person/merge` call asks for
 * its slot together with the people it names; the pacer grants it only while no other call naming
 * one of them holds the turn, from its grant until its holder gives the turn back (once the call
 * is answered) or the turn's time runs out (a holder that died or hung). So two merges of one
 * person never overlap, whichever objects deliver them.
 *
 * A call kept waiting is next in line for its people (unless another waiting call already is for
 * one of them): a holder asking again at once for the same person does not overtake it.
 *
 * Pure, like `pace()`: the pacer object keeps one {@link TurnBook} in memory. It holds only the
 * turns of calls in flight (or answered and not yet given back, or dead and not yet run out) and
 * the calls waiting for them. The turns held are also written to the object's storage
 * ({@link heldTurns}, {@link restoreTurns}): an object that restarts (a deploy, an eviction) while
 * merge calls are in flight still keeps their people waiting. The line of waiting calls is not:
 * they ask again within {@link TURN_WAIT_MS}.
 * @module
 */

/** A merge call's turn: its own id, the people it names (short digests), how long it may be held. */
export interface Turn {
  id: string;
  people: readonly string[];
  /** the turn ends by itself this long after its grant (the call's timeout and a margin) */
  ms: number;
}

/** What a slot request carries: the turn the call asks for (merge calls), and the turns now answered. */
export interface TurnRequest {
  turn?: Turn | undefined;
  giveBack: readonly string[];
}

/** Calls and the people they hold (or wait for): by call, and by person. */
interface Ledger {
  calls: Map<string, { people: readonly string[]; until: number }>;
  people: Map<string, string>;
}

/** The turns held, and the calls next in line. */
export interface TurnBook {
  held: Ledger;
  next: Ledger;
}

/** How long a call whose person's turn is held waits before it asks again. */
export const TURN_WAIT_MS = 100;
/** A waiting call that has not asked again for this long loses its place in line. */
const LINE_MS = 5 * TURN_WAIT_MS;

const ledger = (): Ledger => ({ calls: new Map(), people: new Map() });
export const createTurnBook = (): TurnBook => ({ held: ledger(), next: ledger() });

function remove(book: Ledger, id: string): void {
  const entry = book.calls.get(id);
  if (entry === undefined) return;
  book.calls.delete(id);
  for (const person of entry.people) if (book.people.get(person) === id) book.people.delete(person);
}

function enter(book: Ledger, id: string, people: readonly string[], until: number): void {
  remove(book, id);
  book.calls.set(id, { people, until });
  for (const person of people) book.people.set(person, id);
}

function expire(book: Ledger, now: number): void {
  for (const [id, entry] of book.calls) if (entry.until <= now) remove(book, id);
}

/** Ends the turns given back and those whose time has run out. */
export function endTurns(book: TurnBook, now: number, giveBack: readonly string[]): void {
  for (const id of giveBack) remove(book.held, id);
  expire(book.held, now);
  expire(book.next, now);
}

/**
 * Ends what `request` gives back and what ran out, then answers its turn: 0 when it may go (the
 * caller then takes its slot and {@link holdTurn}s it), else the ms to wait before asking again.
 */
export function turnWait(book: TurnBook, now: number, request: TurnRequest): number {
  endTurns(book, now, request.giveBack);
  const turn = request.turn;
  if (turn === undefined) return 0;
  const other = (of: Ledger, person: string) => (of.people.get(person) ?? turn.id) !== turn.id;
  if (!turn.people.some((person) => other(book.held, person) || other(book.next, person))) return 0;
  // First in line for all its people, or for none: two waiting calls never each keep the other out.
  if (!turn.people.some((person) => other(book.next, person))) enter(book.next, turn.id, turn.people, now + LINE_MS);
  return TURN_WAIT_MS;
}

/** Records `turn` as held from `now`: its people wait for it until it is given back or runs out. */
export function holdTurn(book: TurnBook, now: number, turn: Turn): void {
  remove(book.next, turn.id);
  enter(book.held, turn.id, turn.people, now + turn.ms);
}

/** A held turn as stored: its call's id, its people, when it runs out. */
export type StoredTurn = [id: string, people: string[], until: number];

/** The turns `book` holds, to store. */
export const heldTurns = (book: TurnBook): StoredTurn[] => [...book.held.calls].map(([id, { people, until }]) => [id, [...people], until]);

/** A book holding the stored turns `rows` (anything else in them is skipped). */
export function restoreTurns(rows: unknown): TurnBook {
  const book = createTurnBook();
  if (!Array.isArray(rows)) return book;
  for (const row of rows) {
    const [id, people, until] = Array.isArray(row) ? row : [];
    if (typeof id === 'string' && Array.isArray(people) && people.every((person) => typeof person === 'string') && typeof until === 'number')
      enter(book.held, id, people as string[], until);
  }
  return book;
}
