/**
 * One platform call and what its answer proves about the entries in it:
 * - `ok`: the platform answered 2xx (per-entry results are in the body);
 * - `refused`: a 4xx the entries caused (with per-entry `details` when the platform gave them);
 * - `unapplied`: nothing was applied (429, 503, 408, the key refused, the request never left): send again later;
 * - `ambiguous`: the platform may have applied it (timeout after sending, lost connection, 500/502/504).
 * The classes are those of `policy.ts`, shared with the Workers consumer.
 *
 * Only `unapplied` calls, and ambiguous calls of idempotent endpoints, may be sent again: an
 * `activities/create` that may have been applied is never repeated blindly (`Endpoint.idempotent`).
 * @module
 */
import { ENDPOINTS, type EndpointId } from '../../api/index.js';
import { parseJsonOrUndefined } from '../../api/objects.js';
import { wasNotSent } from '../../api/retry.js';
import { RelayHttpError } from '../core/errors.js';
import type { CallOptions, Upstream } from './caller.js';
import { type CallOutcome, outcomeKind } from './policy.js';
import { refusal } from './verdict.js';
import { readText, type TransportAnswer } from './transport.js';

/**
 * Sends `text` (JSON) to endpoint `id` once, as browser traffic (the breaker of platform refusals
 * pauses it before proxy traffic; `from: 'proven'` when every entry proves its person); never
 * throws for upstream trouble.
 */
export async function callOnce(
  upstream: Upstream,
  id: EndpointId,
  text: string,
  options: Omit<CallOptions, 'from'> & { from?: 'browser' | 'proven' } = {},
): Promise<CallOutcome> {
  let status = 0;
  let answer: unknown;
  const started = Date.now();
  try {
    const reply = await upstream.call(ENDPOINTS[id], text, { ...options, from: options.from ?? 'browser' });
    status = reply.status;
    if (status === 429) return { kind: 'unapplied', status, message: 'the platform asked the relay to slow down', holdMs: (reply.holdSeconds ?? 1) * 1000 };
    if (reply.body instanceof Uint8Array && outcomeKind(status) === 'ok') answer = takenAnswer(reply.body);
    else {
      // The whole body within the call's timeout: a streamed one (chunked, or large) has no timer of its own.
      const body = options.timeoutMs === undefined ? await readText(reply) : await readWithin(reply, started + options.timeoutMs - Date.now());
      if (body === undefined) return { kind: 'ambiguous', status, message: 'the platform did not send its whole answer in time' };
      answer = parseJsonOrUndefined(body);
    }
  } catch (error) {
    // Timeouts (the call was aborted) and network errors come as RelayHttpError; anything else is a bug.
    if (!(error instanceof RelayHttpError)) throw error;
    // Paused by the breaker: nothing was sent.
    if (error.code === 'upstream_paused') return { kind: 'unapplied', status: 0, message: error.message, holdMs: (error.retryAfter ?? 1) * 1000, paused: true };
    if (wasNotSent(error)) return { kind: 'unapplied', status: 0, message: 'the platform could not be reached', holdMs: 0 };
    return { kind: 'ambiguous', status: 0, message: error.code === 'upstream_timeout' ? 'the platform did not answer in time' : 'the connection was lost' };
  }
  switch (outcomeKind(status)) {
    case 'ok':
      // A 2xx whose body is not JSON cannot say what it applied.
      return answer === undefined ? { kind: 'ambiguous', status, message: 'the platform answered without a body' } : { kind: 'ok', status, body: answer };
    case 'unapplied':
      return status === 401 || status === 403
        ? { kind: 'unapplied', status, message: "the platform refused the relay's key (check CDP_API_KEY and CDP_REGION)", holdMs: 0 }
        : { kind: 'unapplied', status, message: `the platform answered ${status}`, holdMs: 0 };
    case 'refused':
      return { kind: 'refused', status, ...refusal(answer, status) };
    default:
      return { kind: 'ambiguous', status, message: `the platform answered ${status}` };
  }
}

/**
 * The answer's body as text if it is read within `ms`; else undefined (or when the stream breaks),
 * and the stream is cancelled, so its connection is freed.
 */
async function readWithin(answer: TransportAnswer, ms: number): Promise<string | undefined> {
  if (!(answer.body instanceof ReadableStream)) return await readText(answer);
  const reader = answer.body.getReader();
  const chunks: Uint8Array[] = [];
  let expire!: () => void;
  const late = new Promise<'late'>((resolve) => (expire = () => resolve('late')));
  const timer = setTimeout(expire, Math.max(0, ms));
  try {
    for (;;) {
      const step = await Promise.race([reader.read(), late]);
      if (step === 'late') {
        await reader.cancel().catch(() => {});
        return undefined;
      }
      if (step.done) break;
      chunks.push(step.value);
    }
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
  const whole = new Uint8Array(chunks.reduce((n, chunk) => n + chunk.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    whole.set(chunk, at);
    at += chunk.length;
  }
  return decoder.decode(whole);
}

const decoder = new TextDecoder();

/** Answers kept read, at most (one a length). */
const KEPT_ANSWERS = 16;
/**
 * The 2xx answers read last, by their length: the platform answers a full call of taken entries
 * with the same bytes call after call (a status per entry, nothing of the entries' own), so such
 * an answer is compared with the one kept, not decoded and parsed again (about 3 µs against 26
 * for a call of 100). What is kept is frozen: every call that reads it reads the same value.
 */
const keptAnswers = new Map<number, { bytes: Uint8Array; value: unknown }>();

/** A 2xx answer's body, parsed (undefined when it is not JSON), or the same bytes' value kept. */
function takenAnswer(bytes: Uint8Array): unknown {
  const kept = keptAnswers.get(bytes.byteLength);
  if (kept !== undefined && sameBytes(kept.bytes, bytes)) return kept.value;
  const value = deepFreeze(parseJsonOrUndefined(decoder.decode(bytes)));
  if (keptAnswers.size >= KEPT_ANSWERS) keptAnswers.clear();
  keptAnswers.set(bytes.byteLength, { bytes: bytes.slice(), value });
  return value;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** `value` frozen through and through (without recursion: a platform's answer may nest deeply). */
function deepFreeze<T>(value: T): T {
  const open: unknown[] = [value];
  while (open.length > 0) {
    const next = open.pop();
    if (typeof next !== 'object' || next === null || Object.isFrozen(next)) continue;
    Object.freeze(next);
    for (const inner of Object.values(next)) open.push(inner);
  }
  return value;
}
