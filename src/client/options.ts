import { baseUrlFor, type Region } from '../api/index.js';

export interface RetryOptions {
  /** attempts after the first one, for 429, 5xx and network errors (never for other 4xx) @default 3 */
  limit?: number;
  /** the longest `try-in-seconds` the client waits out itself; a longer one throws RateLimitError @default 60 */
  maxTryInSeconds?: number;
  /** the longest backoff between 5xx/network retries, in ms (exponential with full jitter below it) @default 10_000 */
  backoffLimit?: number;
}

export interface ClientOptions {
  /** the platform's private key, sent as `X-Api-Key` */
  apiKey?: string;
  /** a relay proxy token, sent as `Authorization: Bearer` (use with `baseUrl` = the relay) */
  token?: string;
  /** the instance's region; picks the base address @default 'default' */
  region?: Region;
  /** an explicit base address (the emulator, the relay); wins over `region` */
  baseUrl?: string;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** ms per attempt @default 10_000 */
  timeout?: number;
  /** `false` turns retries off @default {limit: 3, maxTryInSeconds: 60, backoffLimit: 10_000} */
  retry?: false | RetryOptions;
  /** check bodies against the spec before sending @default true */
  validate?: boolean;
  /** extra headers on every request */
  headers?: Record<string, string>;
}

export interface ResolvedOptions {
  baseUrl: string;
  headers: Record<string, string>;
  fetch: typeof fetch;
  timeout: number;
  retry: Required<RetryOptions>;
  validate: boolean;
}

/** Applies every default once and refuses bad options with an error that names the option. */
export function resolveOptions(options: ClientOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError('createClient(options): options must be an object');
  const { apiKey, token } = options;
  if (apiKey === undefined && token === undefined) throw new TypeError('createClient(options): give apiKey (the platform key) or token (a relay proxy token)');
  if (apiKey !== undefined && (typeof apiKey !== 'string' || apiKey === '')) throw new TypeError('createClient(options): apiKey must be a non-empty string');
  if (token !== undefined && (typeof token !== 'string' || token === '')) throw new TypeError('createClient(options): token must be a non-empty string');
  const baseUrl = (options.baseUrl ?? baseUrlFor(options.region ?? 'default')).replace(/\/+$/, '');
  if (!/^https?:\/\//.test(baseUrl)) throw new TypeError(`createClient(options): baseUrl must be an http(s) URL; got ${JSON.stringify(options.baseUrl)}`);
  const timeout = options.timeout ?? 10_000;
  if (!Number.isFinite(timeout) || timeout <= 0) throw new RangeError('createClient(options): timeout must be a positive number of ms');
  const retry = options.retry === false ? { limit: 0 } : (options.retry ?? {});
  const limit = retry.limit ?? 3;
  if (!Number.isInteger(limit) || limit < 0) throw new RangeError('createClient(options): retry.limit must be a whole number ≥ 0');
  const headers: Record<string, string> = { ...options.headers };
  if (apiKey !== undefined) headers['X-Api-Key'] = apiKey;
  if (token !== undefined) headers['Authorization'] = `Bearer ${token}`;
  return {
    baseUrl,
    headers,
    fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
    timeout,
    retry: { limit, maxTryInSeconds: retry.maxTryInSeconds ?? 60, backoffLimit: retry.backoffLimit ?? 10_000 },
    validate: options.validate ?? true,
  };
}
