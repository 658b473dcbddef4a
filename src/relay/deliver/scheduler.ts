/**
 * The call scheduler of one lease: up to `maxInFlight` calls in flight over the whole round (merge
 * calls one at a time), each in its own pacer slot, marked `sending` right before it goes, in plan order. Each answer is
 * judged (verdict.ts) and settled at once; a call refused as a whole is cut into parts that go as
 * ordinary calls (halving.ts). A call starts only while the lead covers it (lead.ts), the lease
 * has time for it, the round's deadline has not come and the platform has not asked to wait;
 * otherwise its entries go back to the outbox at the end of the lease.
 * @module
 */
import { bodyOf, type Call, only } from './batch.js';
import { type Doubts, MAX_TRIES, retryWait, unanswered } from './doubt.js';
import type { Engine } from './engine.js';
import { MAX_SPLIT_DEPTH, splitRefused } from './halving.js';
import type { Leased, Settlement } from '../state/outbox.js';
import { AMBIGUOUS_REASON, afterAmbiguous } from './policy.js';
import { callOnce } from './send.js';
import { MAX_PACER_WAIT_MS, takeSlot, turnAnswered, turnOf, waitToLeave } from './slots.js';
import { judge } from './verdict.js';
import { keepTrying } from './stored.js';

/** Time kept free at the end of a lease to settle after the call's timeout. */
export const SETTLE_MARGIN_MS = 2_000;
/** A call is not started with less time than this left on its lease (or than its whole timeout, when shorter). */
const MIN_CALL_MS = 1_000;
/** What the lead must outlast a call by: the `sending` write and the connection before it leaves. */
const SEND_MARGIN_MS = 1_000;

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

interface Planned {
  call: Call;
  /** how many times its entries were cut out of a call refused as a whole */
  depth: number;
}

/** Stops the lease's further calls: they go back to the outbox, not before `notBefore`. */
function stop(state: LeaseRun, notBefore: number): void {
  state.stopAt ??= { notBefore };
  state.releaseAt = Math.max(state.releaseAt, state.stopAt.notBefore);
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
      // Merge calls go one at a time: two merges of one person in calls in flight together could apply out of order.
      if (queue[0]!.call.endpoint === 'person/merge' && inFlight.size > 0) {
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
      const slot = await takeSlot(engine, turn);
      // Granted (with its turn) but not going: the turn goes back at once.
      const notGoing = () => turnAnswered(engine, slot === 0 ? turn : undefined);
      const timeoutMs = timeout();
      if (slot !== 0 || timeoutMs < Math.min(MIN_CALL_MS, engine.callTimeoutMs) || engine.stopped() || state.stopAt !== undefined) {
        notGoing();
        stop(state, clock.now() + Math.max(slot, 0));
        state.released.push(...call.entries);
        continue;
      }
      // Its entries are marked `sending` only once it may leave (sendAndSettle): a deliverer that
      // dies while it waits leaves them never-sent (attempts unchanged), not in doubt.
      const flight: Promise<void> = sendAndSettle(engine, call, depth, timeoutMs, state, queue)
        // Its turn goes back once the call is answered (or will not go).
        .finally(() => turnAnswered(engine, turn))
        .catch((error: unknown) => {
          failure ??= error;
        })
        .finally(() => {
          inFlight.delete(flight);
          engine.flights.delete(flight);
        });
      inFlight.add(flight);
      engine.flights.add(flight);
    }
  } finally {
    // Never leave a call unanswered behind us: its settle is ours to do.
    await Promise.allSettled([...inFlight]);
  }
  if (failure !== undefined) throw failure;
}

const log = (engine: Engine, error: string, skipped: number) => engine.log({ level: 'warn', error, skipped });

/**
 * Whether a call that may leave now does not go (an earlier call stopped the lease, the breaker
 * paused unproven calls, the driver is stopping, the lease has too little time left): its entries
 * then go back to the outbox at the end of the lease, unmarked (never sent).
 */
function heldBack(engine: Engine, call: Call, timeoutMs: number, state: LeaseRun): boolean {
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

/**
 * Marks `call`'s entries `sending` (a started send counted on each, only under the lease's own
 * live lease), once the lead outlasts the call. Resolves to the call as it goes (the entries
 * marked), or undefined when it does not go (their entries go back, or are another lease's now).
 */
async function markSending(engine: Engine, call: Call, timeoutMs: number, state: LeaseRun): Promise<Call | undefined> {
  const { outbox, clock, lead } = engine.options;
  if (heldBack(engine, call, timeoutMs, state)) return undefined;
  if (lead && !(await lead.cover(clock.now() + timeoutMs + SEND_MARGIN_MS))) {
    log(engine, 'lead_lost', call.entries.length);
    stop(state, clock.now());
    state.released.push(...call.entries);
    return undefined;
  }
  const marked = new Set(
    await keepTrying(
      () =>
        outbox.sending(
          state.lease,
          call.entries.map((entry) => entry.seq),
          clock.now(),
        ),
      'sending',
      state.expires,
      clock,
      engine.log,
    ),
  );
  // The lease ran out: another lease may hold those entries now; they are not this one's to send.
  if (marked.size < call.entries.length) log(engine, 'lease_lost', call.entries.length - marked.size);
  if (marked.size === 0) return undefined;
  // The outbox counted a started send on each (doubt.ts reads it).
  const going = only(call, (entry) => marked.has(entry.seq));
  return { ...going, entries: going.entries.map((entry) => ({ ...entry, attempts: entry.attempts + 1 })) };
}

/**
 * Sends one call once it may leave, and settles what its answer proves; the parts of a call
 * refused as a whole go to the front of `queue`. Its entries are marked `sending` only then
 * (after its slot and its spacer's wait, right before it goes): a deliverer that dies while the
 * call waits leaves them never-sent, not in doubt.
 */
async function sendAndSettle(engine: Engine, planned: Call, depth: number, plannedTimeoutMs: number, state: LeaseRun, queue: Planned[]): Promise<void> {
  const { upstream, clock, ambiguous } = engine.options;
  let call: Call | undefined;
  let timeoutMs = plannedTimeoutMs;
  let asked = false;
  const left = await waitToLeave(engine, async () => {
    asked = true;
    // The lease has lost the time waited.
    timeoutMs = Math.min(plannedTimeoutMs, state.expires - clock.now() - SETTLE_MARGIN_MS);
    call = await markSending(engine, planned, timeoutMs, state);
    return call !== undefined;
  });
  // The driver stopped while the call waited: it never left.
  if (!asked) heldBack(engine, planned, timeoutMs, state);
  if (left === undefined || call === undefined) return;
  const { lateAsks } = left;
  const outcome = await callOnce(upstream, call.endpoint, bodyOf(call), { timeoutMs, paced: true, from: call.proven ? 'proven' : 'browser' });
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
