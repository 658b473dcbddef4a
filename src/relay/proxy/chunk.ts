/**
 * `?chunk=true`: one call with more items than the platform takes is split into calls of at
 * most `chunking.max` items, every chunk is validated before the first is sent, the chunks go
 * upstream one after another within the rate limit, and the answers are joined in order.
 */
import { validateRequest, type Chunking, type Endpoint, type EndpointId, type ValidationIssue } from '../../api/index.js';
import { ProxyError } from './errors.js';
import type { RateHold } from './hold.js';
import type { ProxyConfig } from './options.js';
import type { Upstream } from './upstream.js';

/** A JSON object (not an array, not null). */
export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export interface Chunk {
  /** index of the chunk's first item in the caller's array */
  from: number;
  count: number;
  body: Record<string, unknown>;
}

/** Splits `body` along the endpoint's chunked array (one chunk when it already fits). */
export function splitBody(chunking: Chunking, body: Record<string, unknown>, maxItems: number): Chunk[] {
  const items = body[chunking.items];
  if (!Array.isArray(items) || items.length <= chunking.max) return [{ from: 0, count: Array.isArray(items) ? items.length : 0, body }];
  if (items.length > maxItems) {
    throw new ProxyError(413, 'too_many_items', `${chunking.items}: ${items.length} entries is over the ${maxItems} one chunked request may carry; send several requests`);
  }
  const chunks: Chunk[] = [];
  for (let from = 0; from < items.length; from += chunking.max) {
    const slice = items.slice(from, from + chunking.max);
    chunks.push({ from, count: slice.length, body: { ...body, [chunking.items]: slice } });
  }
  return chunks;
}

/** Issues of every chunk, their paths renumbered to the caller's array (`people[3]` of chunk 2 is `people[103]`). */
export function validateChunks(endpoint: Endpoint<EndpointId>, chunks: readonly Chunk[]): ValidationIssue[] {
  const key = endpoint.chunking?.items ?? '';
  const renumber = (text: string, from: number) => text.replace(new RegExp(`^${key}\\[(\\d+)\\]`), (_, index: string) => `${key}[${Number(index) + from}]`);
  return chunks.flatMap((chunk) => {
    const result = validateRequest(endpoint.id, chunk.body);
    return result.ok ? [] : result.issues.map((issue) => ({ path: renumber(issue.path, chunk.from), message: renumber(issue.message, chunk.from) }));
  });
}

/** Adds integers, concatenates the `result` array in order; anything else keeps the first chunk's value. */
export function joinAnswers(chunking: Chunking, answers: readonly unknown[]): Record<string, unknown> {
  const joined: Record<string, unknown> = {};
  const result = chunking.join.kind === 'concat' ? chunking.join.result : undefined;
  for (const answer of answers) {
    if (!isObject(answer)) continue;
    for (const [key, value] of Object.entries(answer)) {
      const before = joined[key];
      if (key === result && Array.isArray(value)) joined[key] = Array.isArray(before) ? [...before, ...value] : [...value];
      else if (typeof value === 'number' && typeof before === 'number') joined[key] = before + value;
      else if (!(key in joined)) joined[key] = value;
    }
  }
  return joined;
}

/**
 * A merge where every entry failed is a 400 whose `details` hold one `{status, error}` per
 * entry (upstream-facts): inside a chunked call that is a chunk of per-entry results, not a failure.
 */
function perEntryFailures(chunking: Chunking, chunk: Chunk, status: number, answer: unknown): unknown {
  if (status !== 400 || chunking.join.kind !== 'concat' || !isObject(answer)) return undefined;
  const details = answer['details'];
  if (!Array.isArray(details) || details.length !== chunk.count) return undefined;
  return { [chunking.join.result]: details };
}

/** Spaces upstream calls of chunked requests `1 / ratePerSecond` apart, across all callers of this proxy. */
export class Pacer {
  #next = 0;
  constructor(private readonly config: ProxyConfig) {}

  async turn(): Promise<void> {
    const now = this.config.now();
    const slot = Math.max(now, this.#next);
    this.#next = slot + 1000 / this.config.ratePerSecond;
    if (slot > now) await this.config.sleep(slot - now);
  }
}

interface Sent {
  chunk: number;
  from: number;
  to: number;
  status: number;
  body: unknown;
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/** Sends the chunks in order and answers with the joined result, or a `chunk_failed` error listing every chunk's answer. */
export async function sendChunks(
  context: { config: ProxyConfig; upstream: Upstream; hold: RateHold; pacer: Pacer },
  endpoint: Endpoint<EndpointId> & { chunking: Chunking },
  chunks: readonly Chunk[],
): Promise<{ answer: Record<string, unknown>; calls: number }> {
  const { config, upstream, hold, pacer } = context;
  const { chunking } = endpoint;
  const sent: Sent[] = [];
  const answers: unknown[] = [];
  let calls = 0;
  let waitedMs = 0;
  const budgetMs = config.maxChunkWaitSeconds * 1000;
  for (const [index, chunk] of chunks.entries()) {
    const payload = JSON.stringify(chunk.body);
    let response: Response;
    // Bounded: every 429 adds its wait to waitedMs, and the loop stops once that passes the budget.
    for (;;) {
      const holdMs = hold.remainingMs();
      if (holdMs > 0) {
        if (waitedMs + holdMs > budgetMs) {
          throw failure(429, index, chunk, chunks.length, sent, Math.ceil(holdMs / 1000));
        }
        waitedMs += holdMs;
        await config.sleep(holdMs);
      }
      await pacer.turn();
      calls += 1;
      response = await upstream(endpoint, payload);
      if (response.status !== 429) break;
      await response.body?.cancel().catch(() => undefined);
    }
    const answer = parse(await response.text());
    sent.push({ chunk: index + 1, from: chunk.from, to: chunk.from + chunk.count - 1, status: response.status, body: answer });
    const ok = response.ok ? answer : perEntryFailures(chunking, chunk, response.status, answer);
    if (ok === undefined) throw failure(response.status, index, chunk, chunks.length, sent);
    answers.push(ok);
  }
  return { answer: joinAnswers(chunking, answers), calls };

  function failure(status: number, index: number, chunk: Chunk, total: number, done: Sent[], retryAfter?: number): ProxyError {
    const range = `${chunking.items}[${chunk.from}..${chunk.from + chunk.count - 1}]`;
    const before = index === 0 ? 'nothing was sent before it' : `chunks 1–${index} were accepted (their answers are in details)`;
    const message = `chunk ${index + 1} of ${total} (${range}) failed with status ${status}; ${before}. Resend from ${chunking.items}[${chunk.from}]`;
    const options = retryAfter === undefined ? { details: done } : { details: done, retryAfter };
    return new ProxyError(status >= 400 && status <= 599 ? status : 502, 'chunk_failed', message, options);
  }
}
