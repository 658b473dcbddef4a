/**
 * What `POST /collect` works with (the relay's parts it needs) and what it comes to, shared by
 * collect.ts, its guard (guard.ts) and the HTTP answer (answer.ts).
 * @module
 */
import type { ItemResult } from '../../api/collect.js';
import type { Clock } from '../core/clock.js';
import type { RelayConfig } from '../core/config.js';
import type { RateLimiter } from '../core/limits.js';
import type { RelayStore } from '../state/store.js';
import type { Handoff } from './handoff.js';
import type { Hmac } from './identity.js';
import type { Shapes } from './shapes.js';
import type { SuppressionList } from '../state/suppression.js';

export interface CollectContext {
  config: RelayConfig;
  /** counters (the address-lookup budget) */
  store: RelayStore;
  limiter: RateLimiter;
  clock: Clock;
  /** makes accepted items durable: the outbox, or a queue in front of it (Workers) */
  handoff: Handoff;
  /** shapes the platform took lately (shapes.ts) */
  shapes: Shapes;
  /** people erased at the relay: items naming them are refused (none: no list) */
  suppression?: SuppressionList | undefined;
  /** HMAC-SHA256 for identity checks @default Web Crypto's */
  hmac?: Hmac | undefined;
}

export interface CollectOutcome {
  status: number;
  body: unknown;
  retryAfter?: number;
  /** more headers of a whole-request failure (a 401's `WWW-Authenticate`) */
  headers?: Record<string, string>;
  /** for the log line and observers */
  site?: string | undefined;
  items?: number;
  /** one per item of the batch, in order; a rejected one carries its class (`reason`) */
  results?: ItemResult[];
  /** items whose identity could not be verified (rejected under `required`, reduced under `optional`) */
  unverified?: number;
  /** something went wrong that the caller need not know (logged) */
  warning?: string;
}
