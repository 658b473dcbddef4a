/**
 * The relay's errors: one class for bad configuration (names the variable), one for
 * whole-request answers of `/collect` and the proxy alike (the documented error body).
 * @module
 */
import { relayError, type RelayErrorBody } from '../../api/index.js';

/** A configuration variable is missing or wrong; `variable` names it (e.g. `RELAY_SITES`). */
export class RelayConfigError extends Error {
  override name = 'RelayConfigError' as const;
  readonly variable: string;
  constructor(variable: string, message: string, options?: { cause?: unknown }) {
    super(`${variable}: ${message}`, options);
    this.variable = variable;
  }
}

/** What every caller of a misconfigured relay reads (the log line names the variable at fault). */
export const MISCONFIGURED = "The relay is misconfigured; its operator finds the variable at fault in the relay's logs.";

/** Logs an unexpected failure (a store's, say) at `path` with its cause, as an `internal_error` line. */
export const unexpectedLogger =
  (logger: (entry: Record<string, unknown>) => void, now: () => number) =>
  (error: unknown, path: string, method: string): void =>
    logger({
      level: 'error',
      ts: new Date(now()).toISOString(),
      kind: 'error',
      method,
      path,
      status: 500,
      ms: 0,
      error: 'internal_error',
      cause: describeError(error),
    });

/** An unexpected error for a log line: its name, message and stack (and its cause's), never only its name. */
export function describeError(error: unknown): { name: string; message: string; stack?: string; cause?: unknown } {
  if (!(error instanceof Error)) return { name: typeof error, message: String(error) };
  const described: { name: string; message: string; stack?: string; cause?: unknown } = { name: error.name, message: error.message };
  if (error.stack !== undefined) described.stack = error.stack;
  if (error.cause !== undefined) described.cause = describeError(error.cause);
  return described;
}

/**
 * An answer before any runtime's `Response` is built from it: the Node entry's front writes it
 * straight to `node:http`, every other runtime gets a `Response` ({@link toResponse}).
 */
export interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: string | Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> | null;
}

export const toResponse = (answer: HttpAnswer): Response => new Response(answer.body, { status: answer.status, headers: answer.headers });

/** JSON answer with `Cache-Control: no-store` (nothing the relay answers may sit in a shared cache). */
export function jsonAnswer(body: unknown, status: number, headers: Record<string, string> = {}): HttpAnswer {
  return { status, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers }, body: JSON.stringify(body) };
}

/** {@link jsonAnswer} as a `Response`. */
export const jsonResponse = (body: unknown, status: number, headers: Record<string, string> = {}): Response => toResponse(jsonAnswer(body, status, headers));

export interface RelayHttpErrorOptions {
  /** `details` of the error body, e.g. validation issues `{path, message}` */
  details?: unknown[];
  /** seconds; sets `Retry-After` (and, in the proxy's answer, `try-in-seconds` in the body) */
  retryAfter?: number;
  /** more response headers */
  headers?: Record<string, string>;
  cause?: unknown;
}

/**
 * A whole-request answer (400, 401, 403, 404, 413, 415, 429, 502, 503, 504) with
 * `{"error":{code,message,details}}`.
 *
 * @example
 * throw new RelayHttpError(403, 'forbidden', 'token "crm-sync" lacks the delete scope needed by person/delete');
 */
export class RelayHttpError extends Error {
  override name = 'RelayHttpError' as const;
  readonly status: number;
  readonly code: string;
  readonly details: unknown[];
  /** seconds, sent as `Retry-After` (429 and 503) */
  readonly retryAfter: number | undefined;
  readonly headers: Record<string, string>;
  constructor(status: number, code: string, message: string, options: RelayHttpErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
    this.code = code;
    this.details = options.details ?? [];
    this.retryAfter = options.retryAfter;
    this.headers = options.headers ?? {};
  }

  get body(): RelayErrorBody {
    return relayError(this.code, this.message, this.details);
  }

  /** The answer; with `retryAfter`, `try-in-seconds` too, so clients written for the platform's 429 body back off. */
  toAnswer(): HttpAnswer {
    const { error } = this.body;
    if (this.retryAfter === undefined) return jsonAnswer({ error }, this.status, this.headers);
    return jsonAnswer({ error: { ...error, 'try-in-seconds': this.retryAfter } }, this.status, { ...this.headers, 'retry-after': String(this.retryAfter) });
  }

  toResponse(): Response {
    return toResponse(this.toAnswer());
  }
}
