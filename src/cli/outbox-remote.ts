/**
 * The dead letters of a deployed relay (a Worker, or a Node relay on another machine), through
 * its admin endpoints (`src/relay/ops/admin.ts`) with an admin-scoped relay token: the same three
 * steps `cdp-edge outbox` runs on a local state file.
 * @module
 */
import ky, { isHTTPError } from 'ky';
import type { DeadLetter, Outbox } from '../relay/state/outbox.js';

/** What `cdp-edge outbox` needs of an outbox, local or remote. */
export type DeadLetterDoor = Pick<Outbox, 'deadLetters' | 'retryDead' | 'dropDead'>;

/** The relay's answer to a failed call, as one line: its status, error code and message. */
export function explain(error: unknown, relay: string): Error {
  if (!isHTTPError(error)) return new Error(`the relay at ${relay} did not answer: ${(error as Error).message}`);
  const body = error.data as { error?: { code?: string; message?: string } } | string | undefined;
  const what = typeof body === 'object' && body?.error ? `${body.error.code}: ${body.error.message}` : error.response.statusText;
  return new Error(`the relay at ${relay} answered ${error.response.status} (${what})`);
}

export function remoteOutbox(relay: string, token: string): DeadLetterDoor {
  const http = ky.create({ baseUrl: `${relay.replace(/\/+$/, '')}/admin/outbox/`, headers: { authorization: `Bearer ${token}` }, timeout: 30_000 });
  const call = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      throw explain(error, relay);
    }
  };
  const chosen = (seqs: readonly number[] | undefined) => (seqs === undefined ? { all: true } : { seqs });
  return {
    deadLetters: (options = {}) =>
      call(async () => {
        const searchParams: Record<string, string> = {};
        if (options.site !== undefined) searchParams['site'] = options.site;
        if (options.limit !== undefined) searchParams['limit'] = String(options.limit);
        return (await http.get('dead-letters', { searchParams }).json<{ dead_letters: DeadLetter[] }>()).dead_letters;
      }),
    retryDead: (seqs) => call(async () => (await http.post('retry', { json: chosen(seqs) }).json<{ retried: number }>()).retried),
    dropDead: (seqs) => call(async () => (await http.post('drop', { json: chosen(seqs) }).json<{ dropped: number }>()).dropped),
  };
}
