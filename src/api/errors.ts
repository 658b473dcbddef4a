/**
 * Error bodies: the platform's (docs/platform.md) and the relay's (docs/architecture.md).
 * @module
 */

import { isRecord } from './objects.js';

/** A failed entry of a merge that failed as a whole. */
export interface PlatformErrorDetail {
  status?: 'invalid' | 'suppressed' | string;
  error: string;
  [key: string]: unknown;
}

/** The platform's general error body: `{request_id, code, error, details?}`. */
export interface PlatformErrorBody {
  request_id: string;
  /** the HTTP status */
  code: number;
  error: string;
  details?: PlatformErrorDetail[];
}

/** The platform's 429 body: no `Retry-After` header exists upstream, only `try-in-seconds`. */
export interface RateLimitBody {
  error: { code: 'rate-limit'; message: string; 'try-in-seconds': number };
}

/** The relay's error body: `{"error":{"code","message","details"}}`. */
export interface RelayErrorBody {
  error: { code: string; message: string; details: unknown[] };
}

export const UNKNOWN_ENDPOINT = 'Unknown endpoint or method';

export function platformError(code: number, error: string, details?: PlatformErrorDetail[], requestId: string = crypto.randomUUID()): PlatformErrorBody {
  return details === undefined ? { request_id: requestId, code, error } : { request_id: requestId, code, error, details };
}

export function rateLimitBody(tryInSeconds: number): RateLimitBody {
  return { error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': tryInSeconds } };
}

export function relayError(code: string, message: string, details: unknown[] = []): RelayErrorBody {
  return { error: { code, message, details } };
}

export function isPlatformErrorBody(value: unknown): value is PlatformErrorBody {
  return isRecord(value) && typeof value['code'] === 'number' && typeof value['error'] === 'string';
}

export function isRateLimitBody(value: unknown): value is RateLimitBody {
  return isRecord(value) && isRecord(value['error']) && typeof value['error']['try-in-seconds'] === 'number';
}

export function isRelayErrorBody(value: unknown): value is RelayErrorBody {
  return isRecord(value) && isRecord(value['error']) && typeof value['error']['code'] === 'string' && typeof value['error']['message'] === 'string';
}
