/**
 * Pacer waits, merge turns and send spacing. A call goes only in a slot of the deployment's
 * budget (`Pacer.take`): a short wait is slept out; a long one (the platform's 429 hold) is handed
 * back, and the caller releases its entries to the outbox instead of holding them leased.
 * Where several deliverers share the pacer (Workers), a `person/merge` call asks for its slot
 * together with the turn of the people it names (state/turns.ts), and gives the turn back once
 * answered, on its deliverer's next slot request (or at the end of the round, when none comes).
 * Right before a call goes, it waits for the spacer (spacer.ts) to let it leave, and only then are
 * its entries marked `sending`.
 * @module
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { type Call, namedBy } from './batch.js';
import type { Engine } from './engine.js';
import type { Turn } from '../state/turns.js';
import { describe } from './report.js';
import { MAX_MARK_LEAD_MS } from './spacer.js';

/** The pacer's wait a leased entry sits out; longer (a 429 hold), the entries go back to the outbox. */
export const MAX_PACER_WAIT_MS = 2_000;
/**
 * A merge turn outlasts its call's timeout by this much: the spacer's wait and the `sending` write
 * before the call leaves, the settle after. A holder that never gives it back blocks no longer.
 */
export const TURN_MARGIN_MS = 5_000;

const encoder = new TextEncoder();
/** A person as the pacer sees it: 8 bytes of the digest of a `merge_by` field and value, never the value. */
const personDigest = (named: string) => bytesToHex(sha256(encoder.encode(named)).subarray(0, 8));

/** The turn a call asks for with its slot: merge calls naming someone, where the pacer keeps turns. */
export function turnOf(engine: Engine, call: Call): Turn | undefined {
  if (engine.options.pacer.giveBack === undefined || call.endpoint !== 'person/merge') return undefined;
  const mergeBy = call.envelope['merge_by'] as string[];
  const people = new Set(call.entries.flatMap((entry) => namedBy(entry, mergeBy)).map(personDigest));
  if (people.size === 0) return undefined;
  return { id: crypto.randomUUID(), people: [...people], ms: engine.callTimeoutMs + TURN_MARGIN_MS };
}

/** The call holding `turn` was answered, or will not go: the turn goes back with the next slot request. */
export function turnAnswered(engine: Engine, turn: Turn | undefined): void {
  if (turn !== undefined) engine.answeredTurns.push(turn.id);
}

/** Gives back the answered turns no slot request carried (the round's end); never throws. */
export async function giveBackTurns(engine: Engine): Promise<void> {
  const { pacer, clock } = engine.options;
  const ids = engine.answeredTurns.splice(0);
  if (ids.length === 0 || pacer.giveBack === undefined) return;
  try {
    await pacer.giveBack(ids, clock.now());
  } catch (error) {
    // The turns run out by themselves.
    engine.log({ level: 'warn', error: 'turn_not_given_back', cause: describe(error) });
  }
}

/**
 * Waits for a pacer slot (and `turn`, for a merge call): 0 once taken, else how long the budget
 * is held (nothing was taken). Each request carries the turns answered since the last one.
 */
export async function takeSlot(engine: Engine, turn?: Turn): Promise<number> {
  const { pacer, clock } = engine.options;
  for (;;) {
    const giveBack = engine.answeredTurns.splice(0);
    let wait: number;
    try {
      wait = await (turn === undefined && giveBack.length === 0 ? pacer.take(clock.now(), 'deliver') : pacer.take(clock.now(), 'deliver', { turn, giveBack }));
    } catch (error) {
      engine.answeredTurns.push(...giveBack);
      throw error;
    }
    if (wait === 0) return 0;
    if (wait > MAX_PACER_WAIT_MS || engine.stopped()) return wait;
    await engine.nap(wait);
  }
}

/**
 * Waits until the call may leave (spacer.ts), asking `ready` (the call's `sending` mark: false
 * when it does not go) as long before its place as the last marks took (`Spacer.markLead`, 20 ms
 * at most), so the write ends about when the call may go instead of delaying it: the window counts
 * a call from when it leaves, so a mark's time after the place was lost to the key's pace for
 * good. Resolves to the time it left ({@link Left}): undefined when `ready` said no, or when
 * the deliverer began to stop before the call was ready (nothing was marked: it goes back). The
 * spacer counts the call only once it is ready, right before it goes; a `ready` that took long
 * (a slow store) has the call look again (and count again in the shared window, below).
 *
 * Where the pacer shares a window with proxy calls ({@link Pacer.leave}), the call must fit there
 * too: it is counted there ahead, for when the spacer will let it go, so the store's round trip
 * overlaps the spacer's wait. A call the spacer then still holds (a late answer moved a call of
 * its window) asks again; the place it was counted in stays taken, a slot lost, never one too
 * many. A pacer that cannot be reached does not stop the call (the spacer still spaces it).
 *
 * The calls of this engine look one at a time, in the order they were started, so they are marked
 * and leave in plan order and two never count on the same free place. Once its entries are
 * marked, a call goes even when the deliverer is stopping, whose naps end at once (fill.ts): that
 * last look is slept on a timer of its own (a stop waits for this call anyway) rather than looped.
 *
 * With `step` (a pacer that shares the outbox's transactions, {@link LeaveStep}), the count ahead
 * is that step, and a call that may leave within a mark's time is counted and marked in it: one
 * transaction where apart they are two (three with the slot the step takes first, when the caller left it).
 */
export async function waitToLeave(engine: Engine, ready: () => Promise<boolean>, step?: LeaveStep): Promise<Left | undefined> {
  const { clock, pacer } = engine.options;
  let readied = false;
  const pause = (ms: number) => (readied && engine.stopped() ? sleep(ms) : engine.nap(ms));
  /** Marks the call once it may go: false when it does not go. */
  const mark = async () => {
    const started = clock.now();
    readied = await ready();
    engine.spacer.marked(clock.now() - started);
    return readied;
  };
  /** How long before its place the call's mark begins: none once marked. */
  const ahead = () => (readied ? 0 : engine.spacer.markLead());
  const before = engine.leaving;
  let done!: () => void;
  engine.leaving = new Promise<void>((resolve) => (done = resolve));
  await before;
  try {
    if (pacer.leave === undefined) {
      for (;;) {
        if (!readied && engine.stopped()) return undefined;
        const now = clock.now();
        const wait = engine.spacer.look(now);
        // Not while the first call after a pause is out (a probe): when this one may go is not known.
        const lead = engine.spacer.probing(now) ? 0 : ahead();
        if (wait > lead) await pause(wait - lead);
        else if (!readied) {
          if (!(await mark())) return undefined;
        } else if (wait > 0) await pause(wait);
        else {
          engine.spacer.count(now);
          return { at: now, lateAsks: 0 };
        }
      }
    }
    for (let counted = false, again = false, late = 0, place = 0; ; ) {
      if (!readied && engine.stopped()) return undefined;
      const asked = clock.now();
      const wait = engine.spacer.look(asked);
      if (!counted && engine.spacer.probing(asked)) {
        // When it may go is not known until the probe is answered: nothing is counted meanwhile.
        await pause(wait);
        continue;
      }
      if (!counted && step !== undefined) {
        // Marked in the step too when the spacer's wait is within the longest a mark may begin before
        // a call's place (the step is the mark's write): marked apart after the step, each call its
        // spacer held a moment (every call at saturation) cost a commit more. Counted then where it
        // will go: once the step's usual time has passed, as a mark apart ends at the call's place.
        const lead = ahead();
        const marks = !readied && wait <= MAX_MARK_LEAD_MS;
        const inMs = marks ? Math.max(wait, lead) : wait;
        const answer = await step(asked, inMs, again, marks);
        if (answer === undefined) return undefined;
        // The step failed: the pacer's steps and the mark are asked apart from now on.
        if (answer === 'apart') step = undefined;
        else {
          again = false;
          if (answer.wait > 0) {
            await pause(asked + answer.wait - clock.now());
            continue;
          }
          counted = true;
          place = asked + inMs;
          if (answer.marked !== undefined) {
            engine.spacer.marked(clock.now() - asked);
            readied = answer.marked;
            if (!readied) return undefined;
          }
        }
      }
      if (!counted && step === undefined) {
        const shared = await pacer.leave(asked, wait, again).catch((error: unknown) => {
          engine.log({ level: 'warn', error: 'pacer_unreachable', cause: describe(error) });
          return 0;
        });
        // Not counted (it would not fit): nothing counted ahead to move any more.
        again = false;
        if (shared > 0) {
          await pause(asked + wait + shared - clock.now());
          continue;
        }
        counted = true;
        place = asked + wait;
      }
      // Not marked yet: the mark begins as long before the place as marks take, so it ends about then.
      const lead = ahead();
      const left = place - lead - clock.now();
      if (left > 0) await pause(left);
      if (!readied && engine.stopped()) return undefined;
      const at = clock.now();
      // Woken before its place (a drained() caller's wake): the place counted still holds.
      if (at < place - lead) continue;
      if (!readied && at < place) {
        if (!(await mark())) return undefined;
        continue;
      }
      if (at < place) continue;
      // Held longer by its spacer, or woken (or counted, or marked) later than the window's margin
      // allows (a busy event loop, a slow store): its count moves to when it goes, twice at most for lateness.
      const tooLate = at - place > LATE_MS && late < MAX_LATE_ASKS;
      if (engine.spacer.look(at) > 0 || tooLate) {
        if (tooLate) late++;
        counted = false;
        again = true;
        continue;
      }
      if (!readied) {
        if (!(await mark())) return undefined;
        continue;
      }
      engine.spacer.count(at);
      return { at, lateAsks: late };
    }
  } finally {
    done();
  }
}

/**
 * A call's pacer steps at its turn to leave, and its mark, in one store step (Pacer.stepsWith):
 * counts it in the shared window `inMs` from `now` (as `leave`; its slot first, when not taken
 * yet), and marks it `sending` when `mark` (it leaves once the step is done). Answers the wait from `now` before
 * asking again (0: counted) and, when `mark`, whether the call was marked and goes; undefined when
 * the call does not go (its entries dealt with); `apart` when the store step failed: the caller
 * asks each step apart from then on (the slot taken already).
 */
export type LeaveStep = (now: number, inMs: number, again: boolean, mark: boolean) => Promise<{ wait: number; marked?: boolean } | 'apart' | undefined>;

/** When a call left, and how many times it was counted again in the shared window for going late ({@link MAX_LATE_ASKS} at most). */
export interface Left {
  at: number;
  lateAsks: number;
}

/** A deliver call that goes this much after its place in the shared window counted is counted again (the window's margin). */
const LATE_MS = 30;
/** How many times a late call is counted again at most: then it goes where it is. */
const MAX_LATE_ASKS = 2;

/** Sleeps `ms` on a timer that a stop does not end. */
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(1, ms)));
