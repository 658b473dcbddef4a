import type { PlatformErrorDetail } from '../../api/index.js';
import { CdpError } from './cdp-error.js';
import { isRecord } from '../../api/objects.js';

export interface HTTPErrorInit {
  method: string;
  url: string;
  status: number;
  body: unknown;
  cause?: unknown;
}

/**
 * The platform (or the relay) answered with a non-2xx status. Carries the status, the error's
 * code and message, the per-entry `details` of a failed merge, and the request ID to quote to support.
 */
export class HTTPError extends CdpError {
  override name: string = 'HTTPError';
  readonly status: number;
  /** `code` of the body: the HTTP status for platform errors, a snake_case word for relay errors */
  readonly code: string | number;
  readonly details: PlatformErrorDetail[] | unknown[];
  readonly requestId: string | undefined;
  readonly body: unknown;
  readonly method: string;
  readonly url: string;

  constructor(init: HTTPErrorInit) {
    const { message, code, details, requestId } = HTTPError.read(init.body, init.status);
    super(`${init.method} ${init.url} failed with ${init.status}: ${message}`, { cause: init.cause });
    this.status = init.status;
    this.code = code;
    this.details = details;
    this.requestId = requestId;
    this.body = init.body;
    this.method = init.method;
    this.url = init.url;
  }

  /** Reads both the platform's `{request_id, code, error, details}` and the relay's `{error: {code, message, details}}`. */
  private static read(body: unknown, status: number) {
    if (isRecord(body) && isRecord(body['error'])) {
      const error = body['error'];
      return {
        message: String(error['message'] ?? 'error'),
        code: (error['code'] as string | number | undefined) ?? status,
        details: Array.isArray(error['details']) ? (error['details'] as unknown[]) : [],
        requestId: undefined,
      };
    }
    if (isRecord(body) && typeof body['error'] === 'string') {
      return {
        message: body['error'],
        code: (body['code'] as number | undefined) ?? status,
        details: Array.isArray(body['details']) ? (body['details'] as PlatformErrorDetail[]) : [],
        requestId: typeof body['request_id'] === 'string' ? body['request_id'] : undefined,
      };
    }
    return { message: typeof body === 'string' && body ? body.slice(0, 200) : `HTTP ${status}`, code: status, details: [], requestId: undefined };
  }
}
