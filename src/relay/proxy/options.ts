/** The proxy's options, typed once, with every default applied once in {@link resolveOptions}. */
import { LIMITS, RATE_LIMITS } from '../../api/index.js';
import { checkTokens, type TokenConfig } from '../core/tokens.js';
import type { AuditEntry, UpstreamCall } from '../core/observe.js';
import { consoleAudit } from './audit.js';
import type { Backoff } from '../deliver/caller.js';
import type { Pacer } from '../state/outbox.js';
import { fetchTransport, type Transport } from '../deliver/transport.js';

export interface ProxyOptions {
  /** the tokens allowed to call the proxy (from `parseTokens(env.RELAY_TOKENS)`) */
  tokens: readonly TokenConfig[];
  /** where calls go and the key that replaces every caller's credential */
  upstream: { baseUrl: string; apiKey: string };
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** how calls reach the platform (on Node, `createUndiciTransport()`); wins over `fetch` @default a transport on `fetch` */
  transport?: Transport;
  /** called once per upstream call (metrics) */
  onCall?: (call: UpstreamCall) => void;
  /** receives an unexpected error (a bug, not a refusal) with its stack @default console.error */
  onError?: (error: unknown) => void;
  /** receives one audit entry per call (never a token or key) @default one JSON line to console.log */
  logger?: (entry: AuditEntry) => void;
  /** the clock, in ms @default Date.now */
  now?: () => number;
  /** waits `ms`; used between the calls of a chunked request @default setTimeout */
  sleep?: (ms: number) => Promise<void>;
  /** how long to wait for the platform's response headers, in ms @default 30_000 */
  timeoutMs?: number;
  /**
   * the platform's 429 window: `until` (ms since epoch) is read before each call and pushed out
   * by each 429. Pass the object the relay's other forwarders use, so one 429 holds them all.
   * @default a window of this proxy's own
   */
  backoff?: Backoff;
  /**
   * the deployment's budget of platform calls (the relay's deliveries spend it too): each proxy call
   * takes its slot first, and is never made to wait for deliveries @default none
   */
  pacer?: Pacer;
  /** calls per second a chunked request may make upstream @default RATE_LIMITS.professional (10) */
  ratePerSecond?: number;
  /** most items one `?chunk=true` request may carry @default 5_000 */
  maxChunkedItems?: number;
  /** most bytes one `?chunk=true` request may carry @default 16 MB */
  maxChunkedBytes?: number;
  /** longest a chunked request waits out the platform's 429s before giving up, in seconds @default 30 */
  maxChunkWaitSeconds?: number;
}

export interface ProxyConfig {
  tokens: readonly TokenConfig[];
  baseUrl: string;
  apiKey: string;
  transport: Transport;
  onCall: ((call: UpstreamCall) => void) | undefined;
  onError: (error: unknown) => void;
  logger: (entry: AuditEntry) => void;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  timeoutMs: number;
  backoff: Backoff;
  pacer: Pacer | undefined;
  ratePerSecond: number;
  maxBytes: number;
  maxChunkedItems: number;
  maxChunkedBytes: number;
  maxChunkWaitSeconds: number;
}

const positive = (name: string, value: number): number => {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`createProxyRoutes: ${name} must be a positive number; got ${String(value)}`);
  return value;
};

/** Checks the options and applies the defaults; throws `TypeError`/`RangeError` naming the option. */
export function resolveOptions(options: ProxyOptions): ProxyConfig {
  const { upstream } = options;
  if (!Array.isArray(options.tokens)) throw new TypeError('createProxyRoutes: tokens must be an array (use parseTokens(env.RELAY_TOKENS))');
  if (typeof upstream?.apiKey !== 'string' || upstream.apiKey === '')
    throw new TypeError('createProxyRoutes: upstream.apiKey must be the platform key (CDP_API_KEY)');
  let base: URL;
  try {
    base = new URL(upstream.baseUrl);
  } catch (cause) {
    throw new TypeError(`createProxyRoutes: upstream.baseUrl must be an absolute http(s) URL; got ${JSON.stringify(upstream.baseUrl)}`, { cause });
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:')
    throw new TypeError(`createProxyRoutes: upstream.baseUrl must be http or https; got ${base.protocol}`);
  const transport = options.transport ?? fetchTransport(options.fetch ?? globalThis.fetch.bind(globalThis));
  return {
    tokens: checkTokens(options.tokens),
    baseUrl: `${base.origin}${base.pathname.replace(/\/+$/, '')}`,
    apiKey: upstream.apiKey,
    transport,
    onCall: options.onCall,
    onError: options.onError ?? ((error) => console.error('cdp-edge relay proxy: unexpected error', error)),
    logger: options.logger ?? consoleAudit,
    now: options.now ?? Date.now,
    sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    timeoutMs: positive('timeoutMs', options.timeoutMs ?? 30_000),
    backoff: options.backoff ?? { until: 0 },
    pacer: options.pacer,
    ratePerSecond: positive('ratePerSecond', options.ratePerSecond ?? RATE_LIMITS.professional),
    maxBytes: LIMITS.payloadBytes,
    maxChunkedItems: positive('maxChunkedItems', options.maxChunkedItems ?? 5_000),
    maxChunkedBytes: positive('maxChunkedBytes', options.maxChunkedBytes ?? 16 * 1024 * 1024),
    maxChunkWaitSeconds: positive('maxChunkWaitSeconds', options.maxChunkWaitSeconds ?? 30),
  };
}
