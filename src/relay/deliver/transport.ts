/**
 * How a call reaches the platform. The caller (caller.ts) builds the request; a transport only
 * moves it: the standard `fetch` here (Workers, Deno, Bun, tests), undici's pooled `request`
 * on Node (undici.ts). Either one aborts a call that outlives `timeoutMs`, so the socket goes
 * back to the pool (or is closed) instead of waiting for an answer nobody will read.
 * @module
 */

export interface TransportRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  /** serialised once by the caller */
  body: string | undefined;
  /** the wait for the answer's headers and a small body; a streamed body is read within what is left of it by the deliverer (send.ts) */
  timeoutMs: number;
}

/** The platform's answer: small bodies (≤ 64 kB) whole, larger or unsized ones as a stream. */
export interface TransportAnswer {
  status: number;
  contentType: string | undefined;
  retryAfter: string | undefined;
  body: Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> | null;
}

export type Transport = (request: TransportRequest) => Promise<TransportAnswer>;

/** Thrown by a transport when `timeoutMs` passed; the call was aborted. */
export class UpstreamTimeout extends Error {
  override name = 'UpstreamTimeout' as const;
}

/**
 * How long a pooled connection to the platform may stay idle: undici's own default, below the 5 s
 * after which Node's own server (and others, some without saying so) closes one, so the relay
 * closes it first. A call written on a connection the server closes at that moment may have been
 * read or not, and is held in doubt. A server that announces less (`Keep-Alive: timeout=n`) is
 * held to that less a second (node:http's agent) or two (undici's).
 */
export const KEEP_ALIVE_MS = 4_000;

/**
 * Runs `then` once the event loop has polled for I/O at least once: a close the platform sent on
 * an idle pooled connection, already arrived but not yet read, is read first. Two immediates:
 * from a callback of I/O the first runs before any new poll (undici's own check of an idle
 * socket, one immediate, then writes on a connection already closed).
 */
export const afterPoll = (then: () => void): void => void setImmediate(() => setImmediate(then));

/** Answers up to this size are read whole: one write when passed on, one parse when read. */
export const SMALL_BODY = 64 * 1024;

export const isBodyless = (status: number, method: string) => method === 'HEAD' || status === 204 || status === 304;

const decoder = new TextDecoder();

/** The answer's body as text (a streamed one is read to its end). */
export async function readText(answer: TransportAnswer): Promise<string> {
  if (answer.body === null) return '';
  if (answer.body instanceof Uint8Array) return decoder.decode(answer.body);
  return await new Response(answer.body).text();
}

/** Drops an answer's body unread (a stream is cancelled so its connection is freed). */
export async function discard(answer: TransportAnswer): Promise<void> {
  if (answer.body instanceof ReadableStream) await answer.body.cancel();
}

/**
 * A transport on a standard `fetch`. A timeout aborts the fetch through its signal; the wait
 * also ends on the abort itself, so a `fetch` that ignores signals cannot hold the caller.
 * Redirects are never followed: fetch keeps custom headers across origins, so following one
 * could hand the key elsewhere.
 */
export function fetchTransport(fetchImpl: typeof fetch): Transport {
  return async ({ method, url, headers, body, timeoutMs }) => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new UpstreamTimeout(`no answer within ${timeoutMs} ms`));
        // Aborted with no reason of ours: workerd cancels a POST's body still being sent with the
        // signal's reason, and reports any reason but its own AbortError (a disconnection) as an
        // uncaught exception nobody can catch (an unhandled UpstreamTimeout in a loaded test run).
        // An abort that meets the answer's headers arriving still leaves workerd's own AbortError
        // unhandled, none of ours: the workerd tests ignore that one by this line
        // (test/workerd/abort-report.ts).
        controller.abort();
      }, timeoutMs);
    });
    try {
      const init: RequestInit = { method, headers, redirect: 'manual', signal: controller.signal };
      if (body !== undefined) init.body = body;
      const response = await Promise.race([fetchImpl(url, init), timedOut]);
      const answer: TransportAnswer = {
        status: response.status,
        contentType: response.headers.get('content-type') ?? undefined,
        retryAfter: response.headers.get('retry-after') ?? undefined,
        body: null,
      };
      if (isBodyless(response.status, method)) {
        await response.body?.cancel();
        return answer;
      }
      const length = Number(response.headers.get('content-length') ?? Number.NaN);
      answer.body = length <= SMALL_BODY ? new Uint8Array(await Promise.race([response.arrayBuffer(), timedOut])) : response.body;
      return answer;
    } catch (error) {
      // An abort surfaces as the fetch's own AbortError on some runtimes: name it what it was.
      if (controller.signal.aborted && !(error instanceof UpstreamTimeout)) throw new UpstreamTimeout(`no answer within ${timeoutMs} ms`, { cause: error });
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };
}
