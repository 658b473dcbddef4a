/**
 * What the relay tells whoever watches it: one event per `/collect` answer, per proxy call and per
 * upstream call. Log lines, Prometheus metrics, the status page and Workers Analytics Engine are
 * all observers of these same events, so they count the same things the same way.
 *
 * An event names a site by its configured name, a proxy caller by its token's name, an item by
 * its id: never a key, a token, a hash or an item's contents.
 * @module
 */
import { type ItemResult, REJECT_REASONS, type RejectReason } from '../../api/collect.js';
import { describeError } from './errors.js';
import { scrubLine } from './logging.js';

/** Why an item was rejected, in classes fit for a metric label (the wire contract's reasons). */
export { REJECT_REASONS, type RejectReason };

/** One upstream call as metrics see it: `status` 0 when no answer came (timeout, network). */
export interface UpstreamCall {
  endpoint: string;
  status: number;
  ms: number;
}

/** One proxy call, as the audit trail writes it: it names the token's holder, never the token, the key, a body or the caller's path. */
/* A type (not an interface) so loggers typed for the relay's log lines accept it. */
export type AuditEntry = {
  /** ISO time the call arrived */
  ts: string;
  kind: 'proxy';
  method: string;
  /** the endpoint's fixed path, or `/v1/*` for paths the proxy does not serve */
  path: string;
  status: number;
  /** ms from arrival until the answer's headers were ready (a streamed body may still be flowing) */
  ms: number;
  /** the token's configured name; null when no valid token was presented */
  token: string | null;
  /** the endpoint ID (`person/merge`); null for paths the proxy does not serve */
  endpoint: string | null;
  /** calls made to the platform (0 when refused; more than 1 for `?chunk=true`) */
  upstream_calls: number;
  /** the relay's error code when the relay itself refused or failed the call */
  error?: string;
};

/** How metrics, the status page and Analytics Engine name a request whose key named no site. */
export const UNKNOWN_SITE = '(unknown)';
/** How they name a proxy call without a valid token, or to a path the proxy does not serve. */
export const NONE = '(none)';

/** One item's result as observers see it, the answer's own: `reason` for `rejected`, `error` for `rejected` and `retry`. */
export type ObservedItem = ItemResult;

/** One `POST /collect`, answered. */
export interface CollectEvent {
  /** ms since epoch when the request arrived */
  at: number;
  /** the site's name; undefined when the key named no site */
  site?: string | undefined;
  status: number;
  /** the relay's error code when the request failed as a whole (`rate_limited`, `origin_not_allowed`, …) */
  error?: string | undefined;
  ms: number;
  /** one per item of the batch, in order; empty when the request failed before its items were read */
  items: ObservedItem[];
  /** items whose identity verification failed */
  unverified: number;
}

/** One platform call of the deliverer (or, `called` false, entries it settled without a call), answered or not. */
export interface DeliveryEvent {
  at: number;
  endpoint: 'person/merge' | 'activities/create';
  /** the platform's status; 0 = no answer */
  status: number;
  /** false when no call was made (entries held at lease, their earlier call's outcome unknown) */
  called: boolean;
  delivered: number;
  /** sent back to the outbox for later (not applied, or a merge whose outcome is unknown) */
  released: number;
  /** refused by the platform for good: kept in the dead-letter list with the reason */
  dead: { site: string; id: string; reason: string; status?: number | undefined }[];
  /** activities whose call may or may not have been applied */
  ambiguous: { site: string; id: string }[];
  /** whether the ambiguous ones were held (dead letters, reason `ambiguous`) or sent again */
  held: boolean;
  /** ms from acceptance to delivery, per delivered entry */
  latencies: number[];
  /**
   * a call's asks of the pacer's shared window made again because it went later than its place
   * there (a busy event loop: deliver/slots.ts, two at most), beside the asks its traffic causes
   */
  lateAsks?: number;
  /**
   * the send margin the deliverer keeps for the key once the call was answered (state/margin.ts:
   * 0.03 until the platform's 429s widen it); only for calls of the Node deliverer, whose spacer
   * lasts across rounds (on Workers the key's pacer object keeps it, and no call reads it)
   */
  margin?: number;
}

export interface RelayObserver {
  collect?(event: CollectEvent): void;
  delivery?(event: DeliveryEvent): void;
  proxy?(entry: AuditEntry): void;
  upstream?(call: UpstreamCall): void;
}

/** One observer that tells each of `observers`; a throwing observer does not stop the others or the request. */
export function observeAll(...observers: (RelayObserver | undefined)[]): Required<RelayObserver> {
  const present = observers.filter((observer): observer is RelayObserver => observer !== undefined);
  const tell = <K extends keyof RelayObserver>(kind: K, event: Parameters<NonNullable<RelayObserver[K]>>[0]) => {
    for (const observer of present) {
      try {
        (observer[kind] as ((event: unknown) => void) | undefined)?.(event);
      } catch (error) {
        console.error(`cdp-edge relay: an observer failed on a ${kind} event`, scrubLine(describeError(error)));
      }
    }
  };
  return {
    collect: (event) => tell('collect', event),
    proxy: (entry) => tell('proxy', entry),
    upstream: (call) => tell('upstream', call),
    delivery: (event) => tell('delivery', event),
  };
}
