/**
 * The queue consumer's platform calls: the claimed entries of a batch in full calls (≤ 100
 * entries, ≤ 2 MB, `person/merge` before `activities/create`), each call paced, sent once, and
 * its outcome turned into a fate per entry by the shared policy (deliver/policy.ts). Nothing
 * here retries a call: an entry that must go again goes back to the queue.
 * @module
 */
import { ENDPOINTS, isRecord, splitBody, type EndpointId } from '../../api/index.js';
import { parseJsonOrUndefined } from '../../api/objects.js';
import type { QueuedEntry } from './handoff.js';
import { entryResult, refusal } from '../deliver/verdict.js';
import type { Clock } from '../core/clock.js';
import type { Pacer } from '../state/outbox.js';
import type { DeliveryEvent } from '../core/observe.js';
import type { AmbiguousPolicy } from '../core/config.js';
import { AMBIGUOUS_REASON, afterAmbiguous, outcomeKind } from '../deliver/policy.js';
import { RelayHttpError } from '../core/errors.js';
import type { Upstream } from '../deliver/caller.js';
import { readText } from '../deliver/transport.js';

/** What becomes of one claimed entry. */
export type Fate =
  | { kind: 'delivered' }
  /** known not to be applied: back to the queue after `delaySeconds` */
  | { kind: 'released'; delaySeconds: number }
  /** refused for good, or held after an ambiguous call: to the dead letters */
  | { kind: 'dead'; reason: string; status?: number; error?: string };

/** One entry of a call, with its message's handle. */
export interface Sending {
  key: object;
  body: QueuedEntry;
}

export interface CallContext {
  upstream: Upstream;
  pacer: Pacer;
  policy: AmbiguousPolicy;
  clock: Clock;
  /** no call starts after this (ms since epoch) */
  deadline: number;
  /** every status seen (0 = no answer), for the log line */
  statuses: number[];
  /**
   * A call carrying `entries` is about to go: counts the send in the ledger, and resolves to the
   * keys of the entries still this consumer's (only those are sent).
   */
  sending(entries: readonly Sending[]): Promise<ReadonlySet<object>>;
  /** told what became of each call's entries (Analytics Engine's `delivery` points) */
  observe?: ((event: DeliveryEvent) => void) | undefined;
}

interface Call {
  endpoint: 'person/merge' | 'activities/create';
  envelope: Record<string, unknown>;
  entries: Sending[];
}

/** Seconds a released entry waits when nothing says how long: the queue's own pace of retries. */
const RELEASE_DELAY_S = 5;
/** A refused key is not fixed in seconds. */
const KEY_REFUSED_DELAY_S = 60;

/** The claimed entries in calls: merges (by envelope) first, then activities, each within the platform's limits. */
export function buildCalls(entries: readonly Sending[]): Call[] {
  const groups = new Map<string, Call>();
  for (const sending of entries) {
    const { endpoint, envelope } = sending.body;
    const key = `${endpoint}\u0000${JSON.stringify(envelope)}`;
    let group = groups.get(key);
    if (!group) {
      group = { endpoint, envelope, entries: [] };
      groups.set(key, group);
    }
    group.entries.push(sending);
  }
  const ordered = [...groups.values()].sort((a, b) => (a.endpoint === b.endpoint ? 0 : a.endpoint === 'person/merge' ? -1 : 1));
  return ordered.flatMap((group) => {
    const chunking = ENDPOINTS[group.endpoint].chunking!;
    const indexes = group.entries.map((_, index) => index);
    // splitBody measures the real entries; the indexes say which messages each chunk holds.
    return splitBody({ ...group.envelope, [chunking.items]: group.entries.map((s) => s.body.entry) }, chunking).map((chunk) => ({
      ...group,
      entries: indexes.slice(chunk.from, chunk.from + chunk.count).map((index) => group.entries[index]!),
    }));
  });
}

/** Waits for the pacer's slot; false when the wait would pass the deadline (nothing was taken). */
async function slot(ctx: CallContext): Promise<{ ok: true } | { ok: false; waitMs: number }> {
  for (;;) {
    const now = ctx.clock.now();
    const wait = await ctx.pacer.take(now, 'deliver');
    if (wait === 0) return { ok: true };
    if (now + wait > ctx.deadline) return { ok: false, waitMs: wait };
    await ctx.clock.sleep(wait);
  }
}

const itemsKey = (endpoint: Call['endpoint']) => (endpoint === 'person/merge' ? 'people' : 'activities');

/** Sends `call` once; the fate of each of its entries goes into `fates`. Resolves to halves to send when the platform refused the call as a whole. */
async function sendCall(ctx: CallContext, call: Call, fates: Map<object, Fate>, seen: { value: number }): Promise<Call[]> {
  const set = (fate: Fate) => {
    for (const sending of call.entries) fates.set(sending.key, fate);
  };
  const paced = await slot(ctx);
  if (!paced.ok) {
    set({ kind: 'released', delaySeconds: Math.max(1, Math.ceil(paced.waitMs / 1000)) });
    seen.value = -1; // no call: nothing to tell
    return [];
  }
  // The send counts as started only now, on this call's entries: a consumer that dies leaves the
  // rest of its batch fresh for the next delivery, not ambiguous.
  let marked: ReadonlySet<object>;
  try {
    marked = await ctx.sending(call.entries);
  } catch {
    marked = new Set();
  }
  // One whose lease ran out (or could not be marked) is not sent: back to the queue.
  for (const sending of call.entries) if (!marked.has(sending.key)) fates.set(sending.key, { kind: 'released', delaySeconds: RELEASE_DELAY_S });
  call = { ...call, entries: call.entries.filter((sending) => marked.has(sending.key)) };
  if (call.entries.length === 0) {
    seen.value = -1;
    return [];
  }
  const key = itemsKey(call.endpoint);
  const text = JSON.stringify({ ...call.envelope, [key]: call.entries.map((s) => s.body.entry) });
  let status = 0;
  let notSent = false;
  let answer: unknown;
  let holdSeconds: number | undefined;
  try {
    // Deliveries are browser traffic: the breaker of platform refusals pauses them before proxy calls.
    const reply = await ctx.upstream.call(ENDPOINTS[call.endpoint as EndpointId], text, { from: 'browser' });
    status = reply.status;
    holdSeconds = reply.holdSeconds;
    answer = parseJsonOrUndefined(await readText(reply));
    // A 2xx whose body is not JSON says nothing of the entries: as if no answer came.
    if (status >= 200 && status < 300 && answer === undefined) status = 0;
  } catch (error) {
    if (!(error instanceof RelayHttpError)) throw error;
    // The breaker kept the call back: nothing left the relay.
    notSent = error.code === 'upstream_paused';
  }
  ctx.statuses.push(status);
  seen.value = status;
  const outcome = outcomeKind(status, notSent);
  if (outcome === 'ok') {
    const answers = isRecord(answer) ? answer[key] : undefined;
    call.entries.forEach((sending, index) => {
      const result = entryResult(call.endpoint, Array.isArray(answers) && answers.length === call.entries.length ? answers[index] : undefined);
      fates.set(sending.key, result.ok ? { kind: 'delivered' } : { kind: 'dead', reason: 'refused', status, error: result.error ?? 'refused' });
    });
    return [];
  }
  if (outcome === 'unapplied') {
    if (status === 429) {
      const seconds = holdSeconds ?? 1;
      await ctx.pacer.hold(ctx.clock.now() + seconds * 1000);
      set({ kind: 'released', delaySeconds: seconds });
    } else set({ kind: 'released', delaySeconds: status === 401 || status === 403 ? KEY_REFUSED_DELAY_S : RELEASE_DELAY_S });
    return [];
  }
  if (outcome === 'ambiguous') {
    const fate: Fate =
      afterAmbiguous(call.endpoint, ctx.policy) === 'resend'
        ? { kind: 'released', delaySeconds: RELEASE_DELAY_S }
        : {
            kind: 'dead',
            reason: AMBIGUOUS_REASON,
            status,
            error: status === 0 ? 'no answer came; the call may have been applied' : `the platform answered ${status}`,
          };
    set(fate);
    return [];
  }
  // Refused as a whole: per-entry details map one to one; else halve until the bad entries are alone.
  const { message, details } = refusal(answer, status);
  if (details.length === call.entries.length || call.entries.length === 1) {
    call.entries.forEach((sending, index) => {
      const detail = details[index];
      const error = isRecord(detail) && typeof detail['error'] === 'string' ? detail['error'] : message;
      fates.set(sending.key, { kind: 'dead', reason: 'refused', status, error });
    });
    return [];
  }
  const half = Math.ceil(call.entries.length / 2);
  return [
    { ...call, entries: call.entries.slice(0, half) },
    { ...call, entries: call.entries.slice(half) },
  ];
}

/**
 * Sends `entries` in full, paced calls; every entry comes back with a fate. A browser's tracks
 * never go before its identifies: when a merge of a site's batch is released, the activities of
 * that site in this batch go back to the queue with it (a little later, so the merge comes first).
 */
export async function deliverEntries(ctx: CallContext, entries: readonly Sending[]): Promise<Map<object, Fate>> {
  const fates = new Map<object, Fate>();
  const calls = buildCalls(entries);
  const mergesBack = new Set<string>();
  while (calls.length > 0) {
    const call = calls.shift()!;
    const sites = new Set(call.entries.map((s) => s.body.site));
    if (call.endpoint === 'activities/create' && [...sites].some((site) => mergesBack.has(site))) {
      const back = call.entries.filter((s) => mergesBack.has(s.body.site));
      for (const s of back) fates.set(s.key, { kind: 'released', delaySeconds: RELEASE_DELAY_S + 1 });
      const rest = call.entries.filter((s) => !mergesBack.has(s.body.site));
      if (rest.length > 0) calls.unshift({ ...call, entries: rest });
      continue;
    }
    const status = { value: 0 };
    const halves = await sendCall(ctx, call, fates, status);
    calls.unshift(...halves);
    if (halves.length === 0 && status.value >= 0) ctx.observe?.(deliveryEvent(ctx, call, fates, status.value));
    if (call.endpoint === 'person/merge') for (const s of call.entries) if (fates.get(s.key)?.kind === 'released') mergesBack.add(s.body.site);
  }
  return fates;
}

/** What became of one call's entries, as the deliverer on Node tells it (metrics, Analytics Engine). */
export function deliveryEvent(
  ctx: Pick<CallContext, 'policy' | 'clock'>,
  call: Pick<Call, 'endpoint' | 'entries'>,
  fates: Map<object, Fate>,
  status: number,
  called = true,
): DeliveryEvent {
  const event: DeliveryEvent = {
    at: ctx.clock.now(),
    endpoint: call.endpoint,
    status,
    called,
    delivered: 0,
    released: 0,
    dead: [],
    ambiguous: [],
    held: ctx.policy === 'hold',
    latencies: [],
  };
  // Activities of an ambiguous call (or held without one) are the ambiguous entries, held or resent.
  const unknown = call.endpoint === 'activities/create' && (!called || outcomeKind(status) === 'ambiguous');
  for (const sending of call.entries) {
    const fate = fates.get(sending.key);
    const { site, id } = sending.body;
    if (unknown) event.ambiguous.push({ site, id });
    else if (fate?.kind === 'delivered') event.delivered++;
    else if (fate?.kind === 'released') event.released++;
    else if (fate?.kind === 'dead') event.dead.push({ site, id, reason: fate.reason, ...(fate.status === undefined ? {} : { status: fate.status }) });
  }
  return event;
}
