/**
 * The relay's errors: one class for bad configuration (names the variable), one for
 * whole-request answers (mapped to the documented error body in one place, `app.ts`).
 * @module
 */
import { relayError, type RelayErrorBody } from '../api/index.js';

/** A configuration variable is missing or wrong; `variable` names it (e.g. `RELAY_SITES`). */
export class RelayConfigError extends Error {
  override name = 'RelayConfigError' as const;
  readonly variable: string;
  constructor(variable: string, message: string, options?: { cause?: unknown }) {
    super(`${variable}: ${message}`, options);
    this.variable = variable;
  }
}

/** A whole-request answer: 400, 401, 403, 413, 415, 429, 503 with `{"error":{code,message,details}}`. */
export class RelayHttpError extends Error {
  override name = 'RelayHttpError' as const;
  readonly status: number;
  readonly code: string;
  readonly details: unknown[];
  /** seconds, sent as `Retry-After` (429 and 503) */
  readonly retryAfter: number | undefined;
  constructor(status: number, code: string, message: string, options: { details?: unknown[]; retryAfter?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.status = status;
    this.code = code;
    this.details = options.details ?? [];
    this.retryAfter = options.retryAfter;
  }

  get body(): RelayErrorBody {
    return relayError(this.code, this.message, this.details);
  }
}
