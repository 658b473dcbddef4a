/**
 * What a platform call's answer proves about each of its entries: delivered, refused (dead
 * letter, with the reason), not applied (released for later), or ambiguous (the policy decides).
 * Pure: every path that sends entries (the deliverer, the Workers paths) reads answers here.
 * @module
 */
import { isRecord } from '../../api/objects.js';
import type { Call, CallEndpoint } from './batch.js';
import type { Leased } from '../state/outbox.js';
import type { CallOutcome } from './policy.js';

/** A released entry waits this long after a failure that asked no particular wait (`RELAY_DELIVERY_RETRY_MS`). */
export const RETRY_MS = 5_000;
/** An entry whose outcome is unknown goes again (a merge, or an activity under `resend`) after this long, or the retry wait when shorter (the first wait: doubt.ts). */
const AMBIGUOUS_RETRY_MS = 1_000;

/** What a call proved about its entries. */
export interface Verdict {
  delivered: Leased[];
  dead: { entry: Leased; reason: string; status?: number }[];
  /** not sent or not applied: back to the outbox */
  released: Leased[];
  /** entries of an ambiguous call: merges (and activities under `resend`) go again (doubt.ts), other activities are held (dead letter `ambiguous`) */
  ambiguous: Leased[];
  notBefore: number;
  /** refused as a whole with nothing saying which entries: cut it into parts to find them */
  split: boolean;
}

/** The result of an entry the platform took: one object for all of them. */
const TAKEN: { readonly ok: true } = Object.freeze({ ok: true });

/** Per-entry result of a successful call: whether the platform took the entry, and why not. */
export function entryResult(endpoint: CallEndpoint, answer: unknown): { readonly ok: boolean; readonly error?: string } {
  if (!isRecord(answer)) return TAKEN;
  const status = answer['status'];
  const error = typeof answer['error'] === 'string' ? answer['error'] : undefined;
  if (endpoint === 'person/merge') {
    return status === 'created' || status === 'merged' || status === undefined
      ? TAKEN
      : { ok: false, error: error ?? `the platform answered ${String(status)}` };
  }
  return status === 'invalid' || status === 'error' || (error !== undefined && status !== 'queued') ? { ok: false, error: error ?? 'invalid activity' } : TAKEN;
}

/** The message and per-entry details of an error body: the platform's `{error, details}` or a relay's `{error: {message, details}}`. */
export function refusal(body: unknown, status: number): { message: string; details: unknown[] } {
  if (!isRecord(body)) return { message: typeof body === 'string' && body !== '' ? body.slice(0, 200) : `HTTP ${status}`, details: [] };
  const error = body['error'];
  if (isRecord(error)) return { message: String(error['message'] ?? 'error'), details: Array.isArray(error['details']) ? error['details'] : [] };
  return { message: typeof error === 'string' ? error : `HTTP ${status}`, details: Array.isArray(body['details']) ? body['details'] : [] };
}

/** The per-entry answers of a 2xx body, when there is one per entry. */
export function answersOf(endpoint: CallEndpoint, body: unknown, count: number): unknown[] | undefined {
  const answers = isRecord(body) ? body[endpoint === 'person/merge' ? 'people' : 'activities'] : undefined;
  return Array.isArray(answers) && answers.length === count ? answers : undefined;
}

/**
 * What `outcome` proves about each entry of `call`, answered at `now`; `canSplit` when a call
 * refused as a whole may still be cut into parts; `retryMs`: how long an entry not applied waits
 * when the platform asked no particular wait.
 */
export function judge(call: Pick<Call, 'endpoint' | 'entries'>, outcome: CallOutcome, canSplit: boolean, now: number, retryMs = RETRY_MS): Verdict {
  const verdict: Verdict = { delivered: [], dead: [], released: [], ambiguous: [], notBefore: now, split: false };
  if (outcome.kind === 'ok') {
    const answers = answersOf(call.endpoint, outcome.body, call.entries.length);
    // No per-entry answers: the platform took them all.
    if (answers === undefined) verdict.delivered = [...call.entries];
    else
      for (let i = 0; i < call.entries.length; i++) {
        const entry = call.entries[i]!;
        const result = entryResult(call.endpoint, answers[i]);
        if (result.ok) verdict.delivered.push(entry);
        else verdict.dead.push({ entry, reason: `invalid: ${result.error ?? 'the platform refused the entry'}`, status: outcome.status });
      }
  } else if (outcome.kind === 'refused') {
    // A merge whose every entry failed is a 4xx with one detail per entry.
    if (outcome.details.length === call.entries.length) {
      call.entries.forEach((entry, i) => {
        const detail = outcome.details[i];
        const error = isRecord(detail) && typeof detail['error'] === 'string' ? detail['error'] : outcome.message;
        verdict.dead.push({ entry, reason: `refused: ${error}`, status: outcome.status });
      });
    } else if (canSplit && call.entries.length > 1) {
      verdict.split = true;
    } else {
      for (const entry of call.entries) verdict.dead.push({ entry, reason: `refused: ${outcome.message}`, status: outcome.status });
    }
  } else if (outcome.kind === 'unapplied') {
    verdict.released.push(...call.entries);
    verdict.notBefore = now + (outcome.holdMs > 0 ? outcome.holdMs : retryMs);
  } else {
    verdict.ambiguous.push(...call.entries);
    verdict.notBefore = now + Math.min(AMBIGUOUS_RETRY_MS, retryMs);
  }
  return verdict;
}
