/**
 * One request of the server tracker to the relay's door for servers, `POST /server/collect`, and
 * what its answer means for the items in it: each `accepted`, `duplicate` or `rejected` is final,
 * every other answer (none at all, a timeout, 429, 5xx, a token the relay does not take) keeps the
 * items for another try.
 * @module
 */
import type { CollectAnswer, ItemResult } from '../api/collect.js';
import { retryAfterSeconds } from '../api/retry.js';
import type { ServerItem, ServerResult } from './types.js';

export type Sent =
  /** the relay answered per item: the final ones settle, `retry` ones stay */
  | { kind: 'answered'; final: ServerResult[]; again: number; waitMs: number }
  /** nothing final: try the whole batch again after at least `waitMs` */
  | { kind: 'again'; status?: number | undefined; error: string; waitMs: number; cause?: unknown }
  /** the batch can never be taken as sent (400, 413, 415): every item is rejected with `error` */
  | { kind: 'refused'; status: number; error: string };

export interface SendOptions {
  url: string;
  token: string;
  fetch: typeof fetch;
  timeoutMs: number;
}

const isFinal = (result: ItemResult): result is ItemResult & { status: ServerResult['status'] } => result.status !== 'retry';

/** What the relay's whole-request error says, for `error`. */
async function errorOf(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { error?: { code?: string; message?: string } };
    return `${response.status} ${body.error?.code ?? ''}: ${body.error?.message ?? ''}`;
  } catch {
    return `${response.status} ${response.statusText}`;
  }
}

/** Sends `batch` once; never throws. */
export async function sendBatch(options: SendOptions, batch: readonly ServerItem[]): Promise<Sent> {
  let response: Response;
  try {
    response = await options.fetch(options.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sent_at: new Date().toISOString(), batch }),
      signal: AbortSignal.timeout(options.timeoutMs),
    });
  } catch (cause) {
    return { kind: 'again', error: `the relay could not be reached: ${cause instanceof Error ? cause.message : String(cause)}`, waitMs: 0, cause };
  }
  const waitMs = (retryAfterSeconds(response.headers.get('retry-after'), Date.now()) ?? 0) * 1000;
  if (response.status === 200) {
    let answer: CollectAnswer;
    try {
      answer = (await response.json()) as CollectAnswer;
    } catch (cause) {
      return { kind: 'again', status: 200, error: 'the relay answered 200 without its JSON results', waitMs, cause };
    }
    const byId = new Map((Array.isArray(answer.results) ? answer.results : []).map((result) => [result.id, result]));
    const final: ServerResult[] = [];
    let again = 0;
    for (const item of batch) {
      const result = byId.get(item.id);
      if (result !== undefined && isFinal(result)) final.push({ id: item.id, status: result.status, reason: result.reason, error: result.error });
      else again++;
    }
    return { kind: 'answered', final, again, waitMs };
  }
  const error = await errorOf(response);
  // The batch itself is at fault: sending it again cannot help.
  if (response.status === 400 || response.status === 413 || response.status === 415) return { kind: 'refused', status: response.status, error };
  // 401/403/404: a token or address to fix; 408, 429, 5xx: the relay asks for later. The items wait either way.
  return { kind: 'again', status: response.status, error, waitMs };
}
