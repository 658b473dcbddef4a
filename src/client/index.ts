/**
 * The typed client: one method per platform endpoint, on ky. Runs on Node 20, browsers
 * and workerd (global `fetch`, no Node imports). Splits calls over 100 items, pages through
 * retrievals, waits out 429s, and retries what provably did not apply (and, for idempotent
 * calls, what may have): `activities/create` is never sent twice.
 * @module
 */
export { createClient, type Client } from './client.js';
export type { ClientOptions, RetryOptions } from './options.js';
export { CdpError } from './errors/cdp-error.js';
export { HTTPError } from './errors/http-error.js';
export { RateLimitError } from './errors/rate-limit-error.js';
export { NetworkError } from './errors/network-error.js';
export { TimeoutError } from './errors/timeout-error.js';
export { MaybeAppliedError } from './errors/maybe-applied-error.js';
export { ValidationError } from './errors/validation-error.js';
export { tryInSeconds } from '../api/retry.js';
