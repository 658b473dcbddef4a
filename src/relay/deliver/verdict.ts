/**
 * What a platform call's answer proves about each of its entries: delivered, refused (dead
 * letter, with the reason), not applied (released for later), or ambiguous (the policy decides).
 * @module
 */
import type { Call } from './batch.js';
import { entryResult } from './calls.js';
import type { Leased } from '../state/outbox.js';
import type { CallOutcome } from './send.js';

/** A released entry waits this long after a failure that asked no particular wait. */
const RETRY_MS = 5_000;

/** What a call proved about its entries. */
export interface Verdict {
  delivered: Leased[];
  dead: { entry: Leased; reason: string; status?: number }[];
  /** not sent or not applied: back to the outbox */
  released: Leased[];
  /** ambiguous activities held (dead letter `ambiguous`) or, under `resend`, released */
  ambiguous: Leased[];
  notBefore: number;
}

/** What `outcome` proves about each entry of `call`, answered at `now`; `canSplit` when a refused call may still be halved. */
export function judge(call: Call, outcome: CallOutcome, canSplit: boolean, now: number): Verdict {
  const verdict: Verdict = { delivered: [], dead: [], released: [], ambiguous: [], notBefore: now };
  if (outcome.kind === 'ok') {
    const key = call.endpoint === 'person/merge' ? 'people' : 'activities';
    const body = outcome.body as Record<string, unknown> | undefined;
    const answers = body !== null && typeof body === 'object' ? body[key] : undefined;
    call.entries.forEach((entry, i) => {
      const result = entryResult(call.endpoint, Array.isArray(answers) && answers.length === call.entries.length ? answers[i] : undefined);
      if (result.ok) verdict.delivered.push(entry);
      else verdict.dead.push({ entry, reason: `invalid: ${result.error ?? 'the platform refused the entry'}`, status: outcome.status });
    });
  } else if (outcome.kind === 'refused') {
    // A merge whose every entry failed is a 4xx with one detail per entry.
    if (outcome.details.length === call.entries.length) {
      call.entries.forEach((entry, i) => {
        const detail = outcome.details[i] as { error?: unknown } | undefined;
        const error = typeof detail?.error === 'string' ? detail.error : outcome.message;
        verdict.dead.push({ entry, reason: `refused: ${error}`, status: outcome.status });
      });
    } else if (!canSplit) {
      for (const entry of call.entries) verdict.dead.push({ entry, reason: `refused: ${outcome.message}`, status: outcome.status });
    }
  } else if (outcome.kind === 'unapplied') {
    verdict.released.push(...call.entries);
    verdict.notBefore = now + (outcome.holdMs > 0 ? outcome.holdMs : RETRY_MS);
  } else if (call.endpoint === 'person/merge') {
    // Merging the same fields again leaves the person as one merge did: sent again.
    verdict.released.push(...call.entries);
    verdict.notBefore = now + 1_000;
  } else {
    verdict.ambiguous.push(...call.entries);
    verdict.notBefore = now + 1_000;
  }
  return verdict;
}
