/**
 * `?chunk=true`: one call with more items than the platform takes is split into calls of at
 * most `chunking.max` items, every chunk is validated before the first is sent, the chunks go
 * upstream one after another within the rate limit, and the answers are joined in order.
 */
import { failedEntries, joinAnswers, splitBody, type Chunk, type Chunking, type Endpoint, type EndpointId } from '../../api/index.js';
import { RelayHttpError } from '../core/errors.js';
import type { Upstream, UpstreamAnswer } from '../deliver/caller.js';
import { discard, readText } from '../deliver/transport.js';
import type { ProxyConfig } from './options.js';

/** A JSON object (not an array, not null). */
/**
 * Splits `body` along the endpoint's chunked array (one chunk when it already fits), refusing
 * more items than one chunked request may carry.
 */
export function chunksOf(chunking: Chunking, body: Record<string, unknown>, maxItems: number): Chunk[] {
  const items = body[chunking.items];
  if (Array.isArray(items) && items.length > maxItems) {
    throw new RelayHttpError(
      413,
      'too_many_items',
      `${chunking.items}: ${items.length} entries is over the ${maxItems} one chunked request may carry; send several requests`,
    );
  }
  return splitBody(body, chunking);
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
  } catch (notJson) {
    // A chunk's answer that is not JSON is reported as the text it was.
    if (notJson instanceof SyntaxError) return text;
    throw notJson;
  }
};

/** Sends the chunks in order and answers with the joined result, or a `chunk_failed` error listing every chunk's answer. */
export async function sendChunks(
  context: { config: ProxyConfig; upstream: Upstream; pacer: Pacer },
  endpoint: Endpoint<EndpointId> & { chunking: Chunking },
  chunks: readonly Chunk[],
): Promise<{ answer: Record<string, unknown>; calls: number }> {
  const { config, upstream, pacer } = context;
  const { chunking } = endpoint;
  const sent: Sent[] = [];
  const answers: unknown[] = [];
  let calls = 0;
  let waitedMs = 0;
  const budgetMs = config.maxChunkWaitSeconds * 1000;
  for (const [index, chunk] of chunks.entries()) {
    const payload = JSON.stringify(chunk.body);
    let response: UpstreamAnswer;
    // Bounded: every 429 adds its wait to waitedMs, and the loop stops once that passes the budget.
    for (;;) {
      const holdMs = upstream.holdMs();
      if (holdMs > 0) {
        if (waitedMs + holdMs > budgetMs) {
          throw failure(429, index, chunk, chunks.length, sent, Math.ceil(holdMs / 1000));
        }
        waitedMs += holdMs;
        await config.sleep(holdMs);
      }
      await pacer.turn();
      calls += 1;
      response = await upstream.call(endpoint, payload);
      if (response.status !== 429) break;
      await discard(response);
    }
    const answer = parse(await readText(response));
    sent.push({ chunk: index + 1, from: chunk.from, to: chunk.from + chunk.count - 1, status: response.status, body: answer });
    const ok = response.status >= 200 && response.status < 300 ? answer : failedEntries(chunking, chunk, response.status, answer);
    if (ok === undefined) throw failure(response.status, index, chunk, chunks.length, sent);
    answers.push(ok);
  }
  return { answer: joinAnswers(chunking, answers), calls };

  function failure(status: number, index: number, chunk: Chunk, total: number, done: Sent[], retryAfter?: number): RelayHttpError {
    const range = `${chunking.items}[${chunk.from}..${chunk.from + chunk.count - 1}]`;
    const before = index === 0 ? 'nothing was sent before it' : `chunks 1–${index} were accepted (their answers are in details)`;
    const message = `chunk ${index + 1} of ${total} (${range}) failed with status ${status}; ${before}. Resend from ${chunking.items}[${chunk.from}]`;
    const options = retryAfter === undefined ? { details: done } : { details: done, retryAfter };
    return new RelayHttpError(status >= 400 && status <= 599 ? status : 502, 'chunk_failed', message, options);
  }
}
