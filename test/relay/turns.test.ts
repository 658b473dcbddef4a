// The merge turns a shared pacer keeps per person (state/turns.ts), on a virtual clock: a call
// naming someone whose turn another call holds waits, until that call gives the turn back or its
// time runs out; a call kept waiting goes before a holder asking again for the same person.
import { describe, expect, it } from 'vitest';
import { createTurnBook, heldTurns, holdTurn, restoreTurns, TURN_WAIT_MS, type Turn, type TurnBook, turnWait } from '../../src/relay/state/turns.js';

const turn = (id: string, people: string[], ms = 15_000): Turn => ({ id, people, ms });

/** Asks as the pacer object does: the turn's wait, and the turn held when it may go. */
function ask(book: TurnBook, now: number, asked: Turn | undefined, giveBack: string[] = []): number {
  const wait = turnWait(book, now, { turn: asked, giveBack });
  if (wait === 0 && asked) holdTurn(book, now, asked);
  return wait;
}

describe('merge turns per person', () => {
  it('grants calls naming different people at once, and holds a call naming someone another call holds', () => {
    const book = createTurnBook();
    expect(ask(book, 0, turn('a', ['ann', 'bob']))).toBe(0);
    expect(ask(book, 0, turn('b', ['cid']))).toBe(0);
    expect(ask(book, 10, turn('c', ['dan', 'bob']))).toBe(TURN_WAIT_MS);
    // Asking again changes nothing while the holder has not given the turn back; its own place in line never keeps it out.
    expect(ask(book, 110, turn('c', ['dan', 'bob']))).toBe(TURN_WAIT_MS);
    expect(ask(book, 210, turn('c', ['dan', 'bob']), ['a'])).toBe(0);
  });

  it('grants the waiting call once the holder gives the turn back, riding on any request', () => {
    const book = createTurnBook();
    expect(ask(book, 0, turn('a', ['ann']))).toBe(0);
    expect(ask(book, 10, turn('b', ['ann']))).toBe(TURN_WAIT_MS);
    // The holder's next request (an activities call: no turn of its own) gives it back.
    expect(ask(book, 300, undefined, ['a'])).toBe(0);
    expect(ask(book, 310, turn('b', ['ann']))).toBe(0);
    expect(book.held.calls.size).toBe(1);
  });

  it('ends a turn nobody gives back once its time has run out, and not before', () => {
    const book = createTurnBook();
    expect(ask(book, 0, turn('dead', ['ann'], 15_000))).toBe(0);
    expect(ask(book, 14_999, turn('b', ['ann']))).toBe(TURN_WAIT_MS);
    expect(ask(book, 15_000, turn('b', ['ann']))).toBe(0);
  });

  it('lets the call kept waiting go before the holder asking again for the same person', () => {
    const book = createTurnBook();
    expect(ask(book, 0, turn('a1', ['ann']))).toBe(0);
    expect(ask(book, 50, turn('b', ['ann', 'cid']))).toBe(TURN_WAIT_MS);
    // The holder gives its turn back and at once asks for its next merge of the same person: the waiting call is first in line.
    expect(ask(book, 300, turn('a2', ['ann']), ['a1'])).toBe(TURN_WAIT_MS);
    expect(ask(book, 310, turn('b', ['ann', 'cid']))).toBe(0);
    expect(ask(book, 320, turn('a2', ['ann']))).toBe(TURN_WAIT_MS);
    expect(ask(book, 700, turn('a2', ['ann']), ['b'])).toBe(0);
  });

  it('never has two waiting calls keep each other out, and forgets a waiting call that stopped asking', () => {
    const book = createTurnBook();
    expect(ask(book, 0, turn('h', ['ann', 'bob']))).toBe(0);
    expect(ask(book, 10, turn('w1', ['ann']))).toBe(TURN_WAIT_MS);
    expect(ask(book, 20, turn('w2', ['ann', 'bob']))).toBe(TURN_WAIT_MS);
    expect(ask(book, 30, turn('w3', ['bob']))).toBe(TURN_WAIT_MS);
    // Given back: w1 is first in line for ann; w2 waits behind it, bob stays free for w3 (w2 is in line for nobody).
    expect(ask(book, 100, undefined, ['h'])).toBe(0);
    expect(ask(book, 110, turn('w2', ['ann', 'bob']))).toBe(TURN_WAIT_MS);
    expect(ask(book, 120, turn('w3', ['bob']))).toBe(0);
    // w1 never asks again: after its place in line lapses, ann is free for whoever asks.
    expect(ask(book, 200, turn('x', ['ann']))).toBe(TURN_WAIT_MS);
    expect(ask(book, 10_000, turn('x', ['ann']))).toBe(0);
  });

  it('holds only the calls in flight and those waiting: everything given back or run out is forgotten', () => {
    const book = createTurnBook();
    for (let n = 0; n < 100; n++) expect(ask(book, n, turn(`c${n}`, [`p${n}`, `q${n}`]))).toBe(0);
    ask(
      book,
      200,
      undefined,
      Array.from({ length: 50 }, (_, n) => `c${n}`),
    );
    expect(book.held.calls.size).toBe(50);
    expect(book.held.people.size).toBe(100);
    ask(book, 100_000, undefined);
    expect([book.held.calls.size, book.held.people.size, book.next.calls.size, book.next.people.size]).toEqual([0, 0, 0, 0]);
  });

  it('stores the turns held and reads them back (a restarted pacer object); skips what is not a turn', () => {
    const book = createTurnBook();
    expect(ask(book, 0, turn('a', ['ann', 'bob']))).toBe(0);
    expect(ask(book, 0, turn('b', ['ann']))).toBe(TURN_WAIT_MS);
    const restored = restoreTurns(JSON.parse(JSON.stringify(heldTurns(book))));
    expect(ask(restored, 10, turn('c', ['bob']))).toBe(TURN_WAIT_MS);
    expect(ask(restored, 15_000, turn('c', ['bob']))).toBe(0);
    for (const junk of [null, 'x', [1], [['id', 'not people', 5]], [['id', [1], 5]], [['id', ['ann'], 'soon']]])
      expect(restoreTurns(junk).held.calls.size).toBe(0);
  });
});
