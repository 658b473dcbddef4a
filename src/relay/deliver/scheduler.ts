/**
 * The call scheduler of one lease: up to `maxInFlight` calls in flight over the whole round (a
 * merge call never beside another naming one of its people), each in its own pacer slot, marked `sending` right before it goes, in plan order. Each answer is
 * judged (verdict.ts) and settled at once; a call refused as a whole is cut into parts that go as
 * ordinary calls (halving.ts). A call starts only while the lead covers it (lead.ts), the lease
 * has time for it, the round's deadline has not come and the platform has not asked to wait;
 * otherwise its entries go back to the outbox at the end of the lease.
 * @module
 */
import { bodyOf, type Call, only, peopleOf } from './batch.js';
import { MAX_TRIES, retryWait, unanswered } from './doubt.js';
import type { Engine } from './engine.js';
import { MAX_SPLIT_DEPTH, splitRefused } from './halving.js';
import type { Settlement } from '../state/outbox.js';
import { AMBIGUOUS_REASON, afterAmbiguous } from './policy.js';
import { callOnce } from './send.js';
import { MAX_PACER_WAIT_MS, takeSlot, turnAnswered, turnOf, waitToLeave } from './slots.js';
import { createMarking, heldBack, type LeaseRun, log, MIN_CALL_MS, SEND_MARGIN_MS, SETTLE_MARGIN_MS, stop, withThisSend } from './marking.js';
import { judge } from './verdict.js';

interface Planned {
  call: Call;
  /** how many times its entries were cut out of a call refused as a whole */
  depth: number;
}

/**
 * Stops the lease's further calls of unproven entries only (the breaker held one): theirs go back
 * not before `notBefore`; the lease's other entries (proven ones, those held back to fill a call)
 * keep their own time.
 */
function pause(state: LeaseRun, notBefore: number): void {
  state.pausedAt ??= { notBefore };
}

/**
 * Sends `calls`; `started` is told once every call has started. Returns once every call started
 * here has been answered and settled (a stop waits for them).
 */
export async function runCalls(engine: Engine, calls: readonly Call[], state: LeaseRun, started?: () => void): Promise<void> {
  const { clock, lead } = engine.options;
  const queue: Planned[] = calls.map((call) => ({ call, depth: 0 }));
  const inFlight = new Set<Promise<void>>();
  /** the people (and browsers) each merge call in flight names */
  const merging = new Map<Promise<void>, ReadonlySet<string>>();
  let failure: unknown;
  try {
    while ((queue.length > 0 || inFlight.size > 0) && failure === undefined) {
      if (queue.length === 0) {
        // Every call of the lease has started: the next lease may begin.
        started?.();
        await Promise.race(inFlight);
        continue;
      }
      if (engine.flights.size >= engine.maxInFlight) {
        await Promise.race(engine.flights);
        continue;
      }
      // Two merges of one person in calls in flight together could apply out of order: a merge
      // call waits for those in flight naming one of its people (or browsers), not for the others.
      if (queue[0]!.call.endpoint === 'person/merge' && sharesPeople(engine, queue[0]!.call, merging)) {
        await Promise.race(inFlight);
        continue;
      }
      const { call: planned, depth } = queue.shift()!;
      let call = planned;
      // A merge of a person whose earlier merge is in doubt waits for it: it goes back, the rest of the call goes on.
      const waiting = call.endpoint === 'person/merge' ? call.entries.filter((entry) => state.doubts.names(entry)) : [];
      if (waiting.length > 0) {
        state.doubts.add(waiting);
        state.released.push(...waiting);
        call = only(call, (entry) => !waiting.includes(entry));
        if (call.entries.length === 0) continue;
      }
      const timeout = () => Math.min(engine.callTimeoutMs, state.expires - clock.now() - SETTLE_MARGIN_MS);
      if (state.stopAt === undefined && (engine.stopped() || clock.now() >= engine.options.deadline)) stop(state, clock.now());
      if (state.stopAt === undefined && lead && !(await lead.cover(clock.now() + MAX_PACER_WAIT_MS + timeout() + SEND_MARGIN_MS))) {
        log(engine, 'lead_lost', call.entries.length);
        stop(state, clock.now());
      }
      if (state.stopAt !== undefined) {
        state.released.push(...call.entries);
        continue;
      }
      if (state.pausedAt !== undefined && !call.proven) {
        state.paused.push(...call.entries);
        continue;
      }
      // A slot of the deployment's budget (and a merge call's turn); a long wait (a 429 hold) sends the entries back instead.
      const turn = turnOf(engine, call);
      // Where the pacer takes the slot in one step with the call's place and mark (Pacer.stepsWith),
      // it is taken there, at the call's turn to leave (sendAndSettle), as a take at that moment.
      const later = turn === undefined && engine.step !== undefined;
      const slot = later ? 0 : await takeSlot(engine, turn);
      // Granted (with its turn) but not going: the turn goes back at once.
      const notGoing = () => turnAnswered(engine, slot === 0 ? turn : undefined);
      const timeoutMs = timeout();
      if (slot !== 0 || timeoutMs < Math.min(MIN_CALL_MS, engine.callTimeoutMs) || engine.stopped() || state.stopAt !== undefined) {
        notGoing();
        stop(state, clock.now() + Math.max(slot, 0));
        state.released.push(...call.entries);
        continue;
      }
      // Its entries are marked `sending` only as it may leave (sendAndSettle; the mark begins at most
      // 20 ms before): a deliverer that dies while it waits leaves them never-sent (attempts unchanged), not in doubt.
      const flight: Promise<void> = sendAndSettle(engine, call, depth, timeoutMs, state, queue, later)
        // Its turn goes back once the call is answered (or will not go).
        .finally(() => turnAnswered(engine, turn))
        .catch((error: unknown) => {
          failure ??= error;
        })
        .finally(() => {
          inFlight.delete(flight);
          engine.flights.delete(flight);
          merging.delete(flight);
        });
      inFlight.add(flight);
      engine.flights.add(flight);
      if (call.endpoint === 'person/merge') merging.set(flight, peopleOfCall(engine, call));
    }
  } finally {
    // Never leave a call unanswered behind us: its settle is ours to do.
    await Promise.allSettled([...inFlight]);
  }
  if (failure !== undefined) throw failure;
}

/** The people a merge call names (`merge_by` values as the platform compares them) and its browsers. */
const peopleOfCall = (engine: Engine, call: Call): ReadonlySet<string> => new Set(call.entries.flatMap((entry) => peopleOf(entry, engine.mergeBy(entry.site))));

/** Whether a merge call in flight names one of `call`'s people or browsers. */
function sharesPeople(engine: Engine, call: Call, merging: ReadonlyMap<Promise<void>, ReadonlySet<string>>): boolean {
  if (merging.size === 0) return false;
  const people = peopleOfCall(engine, call);
  for (const named of merging.values()) for (const person of people) if (named.has(person)) return true;
  return false;
}

/**
 * Sends one call once it may leave, and settles what its answer proves; the parts of a call
 * refused as a whole go to the front of `queue`. Its entries are marked `sending` only then
 * (after its slot, at the end of its spacer's wait, right before it goes): a deliverer that dies while the
 * call waits leaves them never-sent, not in doubt. `untaken`: its slot is taken at its turn to
 * leave, in the pacer's one step with its place and mark (Engine.step).
 */
async function sendAndSettle(
  engine: Engine,
  planned: Call,
  depth: number,
  plannedTimeoutMs: number,
  state: LeaseRun,
  queue: Planned[],
  untaken = false,
): Promise<void> {
  const { upstream, clock, ambiguous } = engine.options;
  const marking = createMarking(engine, planned, plannedTimeoutMs, state, untaken);
  const left = await waitToLeave(engine, marking.ready, marking.step);
  const { call: marked, timeoutMs } = marking;
  // The driver stopped while the call waited: it never left.
  if (!marking.asked) heldBack(engine, planned, timeoutMs, state);
  if (left === undefined || marked === undefined) return;
  const { lateAsks } = left;
  const outcome = await callOnce(upstream, marked.endpoint, bodyOf(marked), { timeoutMs, paced: true, from: marked.proven ? 'proven' : 'browser' });
  // What is not settled delivered reads its entries' sends, this one counted.
  const call = outcome.kind === 'ok' ? marked : withThisSend(marked);
  const now = clock.now();
  engine.spacer.answered(left.at, now, outcome.status === 429 && 'holdMs' in outcome ? now + outcome.holdMs : undefined);
  const verdict = judge(call, outcome, depth < MAX_SPLIT_DEPTH, now, engine.retryMs);
  // A spacer kept across rounds (the Node deliverer's) learns the key's margin; a round's own (Workers' shards) does not.
  const margin = engine.options.spacer === undefined ? undefined : engine.spacer.margin(now);
  const called = { endpoint: call.endpoint, status: outcome.status, called: true, lateAsks, margin };
  if (verdict.split) {
    // Refused as a whole without per-entry details: its parts go as ordinary calls, first in line.
    queue.unshift(...splitRefused(call, depth).map((part) => ({ call: part, depth: depth + 1 })));
    engine.options.onCutCall?.([...new Set(call.entries.map((entry) => entry.site))]);
    engine.report({ ...called, delivered: [], dead: [], released: [], ambiguous: [], held: false });
    return;
  }
  // The platform is in trouble (or asked to wait): the rest of the lease goes back, in order. When
  // only the breaker held a call of unproven entries, only such calls go back: proven ones go on.
  // A merge in doubt holds back only the merges of its people (doubt.ts).
  if (outcome.kind === 'unapplied' && outcome.paused && !call.proven) pause(state, verdict.notBefore);
  else if (outcome.kind === 'unapplied' || (outcome.kind === 'ambiguous' && call.endpoint !== 'person/merge')) stop(state, verdict.notBefore);
  const held = afterAmbiguous(call.endpoint, ambiguous) === 'hold';
  // Sent again later, up to MAX_TRIES sends in all; then a dead letter with the last failure.
  const again = held ? [] : verdict.ambiguous.filter((entry) => entry.attempts < MAX_TRIES);
  const ended = held
    ? []
    : verdict.ambiguous
        .filter((entry) => entry.attempts >= MAX_TRIES)
        .map((entry) => ({ entry, reason: unanswered('message' in outcome ? outcome.message : `HTTP ${outcome.status}`), status: outcome.status }));
  if (call.endpoint === 'person/merge') state.doubts.add(again);
  const dead = [...verdict.dead, ...ended];
  const part: Settlement = {
    delivered: verdict.delivered.map((entry) => entry.seq),
    released: [
      // Not applied: this send is forgiven; earlier ones in doubt stay counted.
      ...verdict.released.map((entry) => ({ seq: entry.seq, notBefore: verdict.notBefore, tried: entry.attempts > 1 })),
      ...again.map((entry) => ({ seq: entry.seq, notBefore: now + retryWait(entry.attempts, verdict.notBefore - now), tried: true })),
    ],
    dead: [
      ...dead.map(({ entry, reason, status }) => ({ seq: entry.seq, reason, status })),
      ...(held ? verdict.ambiguous.map((entry) => ({ seq: entry.seq, reason: AMBIGUOUS_REASON, status: outcome.status })) : []),
    ],
  };
  await engine.settle(state.lease, part, state.expires);
  if (verdict.delivered.length > 0) engine.options.onTaken?.(verdict.delivered);
  const refused = verdict.dead.map(({ entry }) => entry);
  if (refused.length > 0) engine.options.onRefused?.(refused, outcome.kind === 'refused');
  engine.report({ ...called, delivered: verdict.delivered, dead, released: verdict.released, ambiguous: held ? verdict.ambiguous : again, held });
}
