/**
 * A call's `sending` mark, right before it goes (scheduler.ts): its entries get a started send
 * counted, under the lease's own live lease, once the lead outlasts the call, and only those the
 * outbox marked go. Asked apart (`Outbox.sending`, tried again after a store failure), or, where
 * the pacer shares the outbox's transactions (`Pacer.stepsWith`, the SQLite file), in one store
 * step with the pacer's: the call's slot, taken at its turn to leave (as a take then), its place
 * in the shared window, and the mark when it leaves at once. One transaction and one WAL sync
 * where apart there are three; the slot and the place are on the disk before the call leaves, as
 * apart, since they are in the commit that marks it (or in an earlier one).
 * @module
 */
import { type Call, only } from './batch.js';
import type { Doubts } from './doubt.js';
import type { Engine } from './engine.js';
import type { Leased } from '../state/outbox.js';
import { describe } from './report.js';
import { type LeaveStep, MAX_PACER_WAIT_MS, takeSlot } from './slots.js';
import { keepTrying } from './stored.js';

/** A call is not started with less time than this left on its lease (or than its whole timeout, when shorter). */
export const MIN_CALL_MS = 1_000;
/** What the lead must outlast a call by: the `sending` write and the connection before it leaves. */
export const SEND_MARGIN_MS = 1_000;
/** Time kept free at the end of a lease to settle after the call's timeout. */
export const SETTLE_MARGIN_MS = 2_000;

/** What the calls of one lease share while they overlap. */
export interface LeaseRun {
  /** the lease's name in the outbox */
  lease: string;
  expires: number;
  /** entries going back to the outbox at the end of the lease, not before `releaseAt` */
  released: Leased[];
  releaseAt: number;
  /** set once the platform asked to wait (or the lease runs short, the lead is lost): no further call starts */
  stopAt: { notBefore: number } | undefined;
  /** set once the breaker held a call of unproven entries: the lease's other such calls go back, proven ones go on (breaker.ts) */
  pausedAt?: { notBefore: number } | undefined;
  /** the entries of those calls: back to the outbox at the end of the lease, not before `pausedAt` */
  paused: Leased[];
  /** the people of merges in doubt (sent again later): the lease's later merges naming them go back too (doubt.ts) */
  doubts: Doubts;
}

export const log = (engine: Engine, error: string, skipped: number) => engine.log({ level: 'warn', error, skipped });

/** Stops the lease's further calls: they go back to the outbox, not before `notBefore`. */
export function stop(state: LeaseRun, notBefore: number): void {
  state.stopAt ??= { notBefore };
  state.releaseAt = Math.max(state.releaseAt, state.stopAt.notBefore);
}

/**
 * Whether a call that may leave now does not go (an earlier call stopped the lease, the breaker
 * paused unproven calls, the driver is stopping, the lease has too little time left): its entries
 * then go back to the outbox at the end of the lease, unmarked (never sent).
 */
export function heldBack(engine: Engine, call: Call, timeoutMs: number, state: LeaseRun): boolean {
  const { clock } = engine.options;
  if (state.stopAt === undefined && (engine.stopped() || timeoutMs < Math.min(MIN_CALL_MS, engine.callTimeoutMs))) stop(state, clock.now());
  if (state.stopAt !== undefined) {
    state.released.push(...call.entries);
    return true;
  }
  if (state.pausedAt !== undefined && !call.proven) {
    state.paused.push(...call.entries);
    return true;
  }
  return false;
}

/** Whether `call` may be marked now: not held back, and the lead outlasts it (else its entries went back). */
async function mayMark(engine: Engine, call: Call, timeoutMs: number, state: LeaseRun): Promise<boolean> {
  const { clock, lead } = engine.options;
  if (heldBack(engine, call, timeoutMs, state)) return false;
  if (lead && !(await lead.cover(clock.now() + timeoutMs + SEND_MARGIN_MS))) {
    log(engine, 'lead_lost', call.entries.length);
    stop(state, clock.now());
    state.released.push(...call.entries);
    return false;
  }
  return true;
}

/**
 * `call` as it goes once the outbox marked `seqs` of it (each once, of those asked): undefined when
 * none. The outbox counted a started send on each; its entries count it only once an answer that
 * is not `ok` is read ({@link withThisSend}): an `ok` one settles them whatever their count.
 */
function markedCall(engine: Engine, call: Call, seqs: readonly number[]): Call | undefined {
  // The lease ran out: another lease may hold those entries now; they are not this one's to send.
  if (seqs.length < call.entries.length) log(engine, 'lease_lost', call.entries.length - seqs.length);
  if (seqs.length === 0) return undefined;
  // Every entry marked (the usual case): the call as it is, no set of its seqs.
  if (seqs.length === call.entries.length) return call;
  const marked = new Set(seqs);
  return only(call, (entry) => marked.has(entry.seq));
}

/** A marked call whose entries count the send it was marked for, as the outbox does (doubt.ts reads them). */
export const withThisSend = (call: Call): Call => ({ ...call, entries: call.entries.map((entry) => ({ ...entry, attempts: entry.attempts + 1 })) });

/** One call's mark, for `waitToLeave` (slots.ts): what it asks, and what it found. */
export interface Marking {
  /** marks the call apart (`Outbox.sending`): false when it does not go */
  ready(): Promise<boolean>;
  /** the pacer's one step with the mark, where the store has it (Engine.step) */
  step: LeaveStep | undefined;
  /** whether the call's entries were dealt with: marked, or gone back */
  readonly asked: boolean;
  /** the call as it goes (its entries marked), once marked */
  readonly call: Call | undefined;
  /** the call's timeout, as the lease's time left when it was marked */
  readonly timeoutMs: number;
}

/**
 * The mark of `planned`, a call of the lease `state`, planned with `plannedTimeoutMs` left.
 * `untaken`: its slot is to be taken in the pacer's one step at its turn to leave; its wait is
 * slept out there when short, and a long one (a 429 hold) sends its entries back, as a slot
 * refused before the call started does (scheduler.ts).
 */
export function createMarking(engine: Engine, planned: Call, plannedTimeoutMs: number, state: LeaseRun, untaken: boolean): Marking {
  const { outbox, clock } = engine.options;
  let asked = false;
  let call: Call | undefined;
  let timeoutMs = plannedTimeoutMs;
  let taken = !untaken;
  /** The lease has lost the time waited. */
  const timeLeft = () => Math.min(plannedTimeoutMs, state.expires - clock.now() - SETTLE_MARGIN_MS);
  const seqs = () => planned.entries.map((entry) => entry.seq);
  /** Its entries go back (the slot was not granted in time), not before `notBefore`. */
  const release = (notBefore: number) => {
    asked = true;
    stop(state, notBefore);
    state.released.push(...planned.entries);
    return undefined;
  };
  const step: LeaveStep | undefined =
    engine.step &&
    (async (now, inMs, again, mark) => {
      if (mark) {
        timeoutMs = timeLeft();
        if (!(await mayMark(engine, planned, timeoutMs, state))) {
          asked = true;
          return undefined;
        }
      }
      try {
        const answer = await engine.step!({ now, take: !taken, inMs, again, sending: mark ? { owner: state.lease, seqs: seqs() } : undefined });
        taken ||= answer.taken;
        if (answer.wait > 0 && !taken)
          return answer.wait <= MAX_PACER_WAIT_MS && !engine.stopped() ? { wait: answer.wait } : release(clock.now() + answer.wait);
        if (answer.marked === undefined) return { wait: answer.wait };
        asked = true;
        call = markedCall(engine, planned, answer.marked);
        return { wait: 0, marked: call !== undefined };
      } catch (error) {
        // Asked apart from now on: a slot or a place counted twice is one lost, never one too many.
        engine.log({ level: 'warn', error: 'pacer_unreachable', cause: describe(error) });
        if (!taken) {
          const slot = await takeSlot(engine);
          taken = slot === 0;
          if (!taken) return release(clock.now() + Math.max(slot, 0));
        }
        return 'apart';
      }
    });
  return {
    async ready() {
      asked = true;
      timeoutMs = timeLeft();
      if (!(await mayMark(engine, planned, timeoutMs, state))) return false;
      const marked = await keepTrying(() => outbox.sending(state.lease, seqs(), clock.now()), 'sending', state.expires, clock, engine.log);
      call = markedCall(engine, planned, marked);
      return call !== undefined;
    },
    step,
    get asked() {
      return asked;
    },
    get call() {
      return call;
    },
    get timeoutMs() {
      return timeoutMs;
    },
  };
}
