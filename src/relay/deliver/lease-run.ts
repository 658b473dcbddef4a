/**
 * Delivering one lease: entries a dead deliverer may have sent are held (activities) or sent again
 * (merges) by the ambiguous-call policy; the rest are planned into calls, merges first and all
 * answered (so no merge of the next lease overlaps them), then the activities.
 * No activity here has an identify before it still to deliver: the outbox does not lease a track
 * while its browser has an earlier merge in it. What is not sent goes back to the outbox at the
 * end of the lease.
 * @module
 */
import { type Call, namedBy, planCalls } from './batch.js';
import { LIMITS } from '../../api/index.js';
import type { Engine } from './engine.js';
import type { Leased } from '../state/outbox.js';
import type { Holds, Naming } from './holds.js';
import { AMBIGUOUS_REASON, afterAmbiguous } from './policy.js';
import type { LeaseRun } from './marking.js';
import { runCalls } from './scheduler.js';
import { createDoubts, cutDoubted } from './doubt.js';

/**
 * In a backlog (the outbox had more than the lease took, or the key's calls a second are spent
 * for now, so a call would wait anyway), a call that is not full waits for the next lease, where
 * it fills: the last activities call, and the last merge call. A lease's
 * identifies are a few of its entries (one a visitor, before that visitor's tracks), so its merge
 * call is rarely full: sent as it is, it costs a whole slot of the key's rate for a fraction of
 * a call. What waits keeps its place: the outbox leases it again, with the next lease's identifies.
 * The last merge call is the one to wait, as no later merge of a person it names is in an earlier
 * call (planCalls). At least one call goes, so a backlog always moves, and no entry is held back
 * more than two seconds in all (holds.ts), so a lone identify in a long backlog still goes.
 */
function fillOnly(calls: Call[], holds: Holds, now: number): Call[] {
  const partial = (call: Call | undefined) => call !== undefined && call.entries.length < LIMITS.itemsPerRequest;
  const out = [...calls];
  const lastOf = (endpoint: Call['endpoint']) => out.findLastIndex((call) => call.endpoint === endpoint);
  for (const endpoint of ['activities/create', 'person/merge'] as const) {
    const index = lastOf(endpoint);
    if (out.length > 1 && partial(out[index]) && holds.mayHold(out[index]!.entries, now)) out.splice(index, 1);
  }
  return out;
}

/** Merge entries as the holds see them: the people each names, as the platform compares them. */
const naming = (engine: Engine, entries: readonly Leased[]): Naming[] =>
  entries.filter((entry) => entry.kind !== 'activity').map((entry) => ({ seq: entry.seq, people: namedBy(entry, engine.mergeBy(entry.site)) }));

/**
 * Splits `going` into what may go in this lease and what waits for a later one: a merge whose
 * person has an older merge held back by an earlier lease (fillOnly) that is not in this one waits
 * for it, with its browser's later entries. Else another browser's newer merge of the person
 * would apply first, and the older one (strategy 2) would then overwrite it.
 */
function notBehindHeld(engine: Engine, going: Leased[], leased: readonly Leased[], now: number): { ready: Leased[]; waiting: Leased[] } {
  const behind = engine.holds.behind(naming(engine, going), leased, now);
  if (behind.size === 0) return { ready: going, waiting: [] };
  const browserOf = (entry: Leased) => `${entry.site}\u0000${entry.browser}`;
  /** per browser: its first merge that waits */
  const from = new Map<string, number>();
  for (const entry of going) if (behind.has(entry.seq)) from.set(browserOf(entry), Math.min(entry.seq, from.get(browserOf(entry)) ?? entry.seq));
  const waits = (entry: Leased) => entry.seq >= (from.get(browserOf(entry)) ?? Number.POSITIVE_INFINITY);
  return { ready: going.filter((entry) => !waits(entry)), waiting: going.filter(waits) };
}

/**
 * Delivers the entries `leased` under lease `lease`; `full` when the outbox had more than it gave
 * (a backlog). `started` is told once every call of the lease has started, and whether calls were
 * held back to fill (their entries are ready again once the lease ends).
 */
export async function deliverLease(
  engine: Engine,
  lease: string,
  leased: readonly Leased[],
  full: boolean,
  started: (heldBack: boolean) => void,
): Promise<void> {
  const { clock, ambiguous } = engine.options;
  const expires = clock.now() + engine.leaseMs;
  // Entries a dead deliverer may have sent: merges go again, activities follow the policy.
  const going: Leased[] = [];
  const heldAtLease: Leased[] = [];
  for (const entry of leased) {
    if (entry.attempts > 0 && afterAmbiguous(entry.kind === 'activity' ? 'activities/create' : 'person/merge', ambiguous) === 'hold') heldAtLease.push(entry);
    else going.push(entry);
  }
  if (heldAtLease.length > 0) {
    await engine.settle(
      lease,
      { delivered: [], released: [], dead: heldAtLease.map((entry) => ({ seq: entry.seq, reason: AMBIGUOUS_REASON, status: 0 })) },
      expires,
    );
    engine.report({ endpoint: 'activities/create', status: 0, called: false, delivered: [], dead: [], released: [], ambiguous: heldAtLease, held: true });
  }

  // A backlog: the outbox had more than the lease took, or calls are going as fast as the key allows.
  const backlog = full || engine.spacer.spent(clock.now());
  const { ready, waiting } = notBehindHeld(engine, going, leased, clock.now());
  const planned = planCalls(ready, engine);
  const filled = backlog ? fillOnly(planned, engine.holds, clock.now()) : planned;
  const heldMerges = planned.filter((call) => call.endpoint === 'person/merge' && !filled.includes(call)).flatMap((call) => call.entries);
  engine.holds.holdPeople(naming(engine, heldMerges), clock.now());
  const allStarted = () => started(filled.length < planned.length || waiting.length > 0);
  // Entries in doubt go apart from the rest (doubt.ts).
  const calls = filled.flatMap(cutDoubted);
  // The calls hold entries of `going` once each: when they hold as many, every one is planned.
  const planning = calls.reduce((n, call) => n + call.entries.length, 0);
  const sent = planning === going.length ? undefined : new Set(calls.flatMap((call) => call.entries.map((entry) => entry.seq)));
  const unplanned = sent === undefined ? [] : going.filter((entry) => !sent.has(entry.seq));

  const state: LeaseRun = {
    lease,
    expires,
    released: [...unplanned],
    paused: [],
    releaseAt: clock.now(),
    stopAt: undefined,
    doubts: createDoubts(engine.mergeBy),
  };
  try {
    await runCalls(
      engine,
      calls.filter((call) => call.endpoint === 'person/merge'),
      state,
    );
    await runCalls(
      engine,
      calls.filter((call) => call.endpoint === 'activities/create'),
      state,
      allStarted,
    );
    // Not sent in this lease: what earlier sends left in doubt stays counted.
    // Each entry keeps its own time: only the calls the breaker paused wait for it (scheduler.ts).
    const pausedUntil = Math.max(state.releaseAt, state.pausedAt?.notBefore ?? 0);
    const released = [
      ...state.released.map((entry) => ({ seq: entry.seq, notBefore: state.releaseAt, tried: entry.attempts > 0 })),
      ...state.paused.map((entry) => ({ seq: entry.seq, notBefore: pausedUntil, tried: entry.attempts > 0 })),
    ];
    if (released.length > 0) await engine.settle(lease, { delivered: [], released, dead: [] }, expires);
  } finally {
    allStarted();
  }
}
