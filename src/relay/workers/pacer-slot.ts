/**
 * The key's pacer as its object (RelayState) runs it: the pacing rule on its stored state, the
 * merge turns, and the wait inside the object for a slot. A call that waits there is answered once
 * granted: one request per call, where answering each wait had the caller ask again after it (and
 * every caller told the same wait asked at once). Each look applies the rule at that moment, so a
 * proxy call, a hold or a merge turn given back meanwhile is seen.
 *
 * Grants are made on the object's own clock, never a caller's: outbox objects on other machines
 * read their `now` from clocks of their own, and a caller whose clock ran ahead would find every
 * slot past and be granted at once, beside calls granted on the others' clocks. A grant is a wait
 * from the moment it is answered, so no clock but this one decides how far apart calls leave.
 *
 * What the object cannot see is how long its answer takes to reach each caller, and that caller's
 * call the platform. It measures what it can: how far each request's stated `now` is from its own
 * clock when it arrives (the way there, or a caller's clock that is off). The spread of that over
 * the recent requests widens the margin kept between grants ({@link arrivalMargin}): ten grants
 * then span a second, the send margin and the spread. The send margin is the key's own, learned
 * from its 429s (state/margin.ts): kept in the `pace_margin` table beside the schedule and hold.
 * @module
 */
import type { DurableObjectState } from '@cloudflare/workers-types/index.ts';
import { marginAt, type Margin } from '../state/margin.js';
import { pace, paceHold, type PaceState, PLATFORM_WINDOW_MS } from '../state/pace.js';
import { endTurns, holdTurn, type TurnBook, type TurnRequest, turnWait } from '../state/turns.js';
import { readTurns, writeTurns } from './turn-store.js';

/** Requests older than this (on the object's clock) no longer count in the spread. */
const SPREAD_WINDOW_MS = 10_000;
/** The most recent requests kept per pacer for the spread. */
const SPREAD_SAMPLES = 64;
/** The spread widens the margin by a platform window at most (beyond that, callers' clocks disagree). */
export const MAX_SPREAD_MS = 1_000;

/**
 * The spacing of grants `intervalMs` apart at the key's rate, once widened by the send `margin` and
 * a measured `spreadMs`: `rate` grants span the platform's second, the margin and the spread.
 */
export const arrivalMargin = (intervalMs: number, spreadMs: number, margin: number): number => intervalMs * (1 + margin + spreadMs / PLATFORM_WINDOW_MS);

/** The tables of the key pacers' state: their schedule and hold, and the margin their 429s taught. */
export const PACE_TABLES = `CREATE TABLE IF NOT EXISTS pace (name TEXT PRIMARY KEY, tat REAL NOT NULL, hold REAL NOT NULL);
  CREATE TABLE IF NOT EXISTS pace_margin (name TEXT PRIMARY KEY, margin REAL NOT NULL, widened REAL NOT NULL);`;

type Storage = DurableObjectState['storage'];

/** The pacers served by one object: their slots, turns and measured spread. `clock`: the object's own. */
export class KeyPacers {
  /** the merge turns of each pacer (state/turns.ts) */
  private readonly turns = new Map<string, TurnBook>();
  /** per pacer, the recent requests: when each arrived (own clock) and how far its stated `now` was from that */
  private readonly arrivals = new Map<string, { at: number; offset: number }[]>();
  /**
   * Requests that could wait here (`waitUpToMs` > 0) and were answered a wait all the same, their
   * slot further off than that: each such call asks again. Counted for tests and benches.
   */
  outwaited = 0;

  constructor(
    private readonly storage: Storage,
    private readonly clock: () => number,
  ) {}

  /**
   * One platform call from pacer `name` (state/pace.ts): 0 when granted, else the ms to wait,
   * from now. `intervalMs`: the spacing at the key's rate, which the object widens by the key's
   * margin and the spread ({@link arrivalMargin}). `stated`: the caller's clock as it asked
   * (measured, never paced by). `turns`: the merge turn granted with the slot, and turns given
   * back. With `waitUpToMs`, the call waits here for both, up to that long.
   */
  async take(
    name: string,
    stated: number,
    priority: 'proxy' | 'deliver',
    intervalMs: number,
    turns: TurnRequest | undefined,
    waitUpToMs: number,
  ): Promise<number> {
    const spread = this.spread(name, stated);
    const wait = await waitForSlot(this.clock, waitUpToMs, (at, first) => this.look(name, at, priority, intervalMs, spread, turns, first));
    if (wait > 0 && waitUpToMs > 0) this.outwaited++;
    return wait;
  }

  /** Gives back merge turns of pacer `name` whose calls are answered (state/turns.ts). */
  giveBack(name: string, ids: string[]): void {
    const book = this.turnBook(name);
    endTurns(book, this.clock(), ids);
    writeTurns(this.storage.sql, name, book);
  }

  /**
   * The platform answered a call of pacer `name` 429: no call before `until`, on the caller's clock
   * at `stated` (its own clock when not stated); the hold's first 429 widens the margin (state/pace.ts `paceHold`).
   */
  hold(name: string, until: number, stated?: number): void {
    const now = this.clock();
    const end = stated === undefined ? until : now + (until - stated);
    this.storage.transactionSync(() => {
      const state = readPace(this.storage, name);
      paceHold(state, now, end);
      writePace(this.storage, name, state);
    });
  }

  /** Notes a request to pacer `name` stated at `stated`; the spread of the recent ones' offsets (ms, at most {@link MAX_SPREAD_MS}). */
  private spread(name: string, stated: number): number {
    const now = this.clock();
    const recent = (this.arrivals.get(name) ?? []).filter((arrival) => arrival.at > now - SPREAD_WINDOW_MS).slice(1 - SPREAD_SAMPLES);
    if (Number.isFinite(stated)) recent.push({ at: now, offset: now - stated });
    this.arrivals.set(name, recent);
    if (recent.length === 0) return 0;
    const offsets = recent.map((arrival) => arrival.offset);
    return Math.min(MAX_SPREAD_MS, Math.max(...offsets) - Math.min(...offsets));
  }

  /** One look at a slot (and turn); the turns are stored on a request's first look and when one is taken. */
  private look(
    name: string,
    now: number,
    priority: 'proxy' | 'deliver',
    intervalMs: number,
    spreadMs: number,
    turns: TurnRequest | undefined,
    first: boolean,
  ): number {
    if (turns === undefined) return paceSlot(this.storage, name, now, priority, intervalMs, spreadMs);
    const book = this.turnBook(name);
    const turnWaits = turnWait(book, now, turns);
    const wait = turnWaits > 0 ? turnWaits : paceSlot(this.storage, name, now, priority, intervalMs, spreadMs);
    const taken = wait === 0 ? turns.turn : undefined;
    if (taken) holdTurn(book, now, taken);
    if (first || taken) writeTurns(this.storage.sql, name, book);
    return wait;
  }

  /** The merge turns of pacer `name`: in memory, read back from storage after a restart (turn-store.ts). */
  private turnBook(name: string): TurnBook {
    const book = this.turns.get(name) ?? readTurns(this.storage.sql, name);
    this.turns.set(name, book);
    return book;
  }
}

/**
 * A slot of pacer `name`'s budget (see {@link pace}) in one transaction, grants `intervalMs` apart
 * widened by the key's margin and `spreadMs` ({@link arrivalMargin}): 0 when granted, else the ms to wait.
 */
export function paceSlot(storage: Storage, name: string, now: number, priority: 'proxy' | 'deliver', intervalMs: number, spreadMs = 0): number {
  const sql = storage.sql;
  return storage.transactionSync(() => {
    const state = readPace(storage, name);
    const wait = pace(state, now, priority, arrivalMargin(intervalMs, spreadMs, marginAt(state, now)));
    if (wait <= 0)
      sql.exec('INSERT INTO pace (name, tat, hold) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET tat = excluded.tat', name, state.tat, state.hold);
    return wait;
  });
}

/** Pacer `name`'s state as stored: schedule, hold and margin. */
function readPace(storage: Storage, name: string): PaceState {
  const sql = storage.sql;
  const pace = sql.exec<{ tat: number; hold: number }>('SELECT tat, hold FROM pace WHERE name = ?', name).toArray()[0] ?? { tat: 0, hold: 0 };
  const margin = sql.exec<{ margin: number; widened: number }>('SELECT margin, widened FROM pace_margin WHERE name = ?', name).toArray()[0];
  return { tat: pace.tat, hold: pace.hold, ...(margin as Margin | undefined) };
}

/** Stores pacer `name`'s hold and margin (a 429's: `paceHold`). */
function writePace(storage: Storage, name: string, state: PaceState): void {
  const sql = storage.sql;
  sql.exec('INSERT INTO pace (name, tat, hold) VALUES (?1, ?2, ?3) ON CONFLICT(name) DO UPDATE SET hold = max(hold, ?3)', name, state.tat, state.hold);
  if (state.margin !== undefined && state.widened !== undefined)
    sql.exec(
      'INSERT INTO pace_margin (name, margin, widened) VALUES (?1, ?2, ?3) ON CONFLICT(name) DO UPDATE SET margin = ?2, widened = ?3',
      name,
      state.margin,
      state.widened,
    );
}

/**
 * Looks (`look`: 0 when granted, else the ms to wait) at `clock()`, sleeping out each wait, until
 * granted or until the wait would pass `waitUpToMs` in all (real time): then answers that wait.
 * `first` tells the look it is the request's first.
 */
export async function waitForSlot(clock: () => number, waitUpToMs: number, look: (now: number, first: boolean) => number): Promise<number> {
  const started = Date.now();
  for (let first = true; ; first = false) {
    const waited = Date.now() - started;
    const wait = look(clock(), first);
    if (wait <= 0 || waited + wait > waitUpToMs) return wait;
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}
