/**
 * The relay's counts in Workers Analytics Engine: an observer (observe.ts) that writes one data
 * point per event to the `ANALYTICS` dataset, the Workers counterpart of the Prometheus metrics on
 * Node (ops/metrics.ts). docs/analytics-engine.md documents the layout and the SQL API queries.
 *
 * Every point, whatever its kind, has the same first columns:
 *
 * | column    | value                                                                 |
 * | --------- | --------------------------------------------------------------------- |
 * | `index1`  | the subject: site name, proxy token name or endpoint ID (sampling key) |
 * | `blob1`   | the kind: `collect`, `proxy` or `upstream`                            |
 * | `blob2`   | the subject again (as in `index1`)                                    |
 * | `blob3`   | the HTTP status as text (`"200"`; `"0"` = no answer upstream)         |
 * | `double1` | 1 (the event; `SUM(_sample_interval * double1)` counts events)        |
 * | `double2` | ms                                                                    |
 * | `double3` | the HTTP status as a number                                           |
 *
 * and then, per kind, `collect`: `blob4` error code (`''` when the request did not fail as a
 * whole), `double4`…`double13` items, accepted, duplicate, rejected, retry, rejected as invalid,
 * not_allowed, unverified, platform, and items whose identity verification failed (`double14`
 * expired, `double15` suppressed); `proxy`:
 * `blob4` endpoint ID (`(none)` for paths the proxy does not serve); `upstream`: nothing more.
 *
 * Names are configured names (a site's `name`, a token's `name`) and endpoint IDs: never a key, a
 * token, a hash, an address or an item's contents. One event is one `writeDataPoint`, which does
 * not wait; a dataset that throws is ignored (the request goes on).
 *
 * @example
 * createRelay(config, { store, observer: analyticsObserver(env.ANALYTICS) });
 * @module
 */
import type { AnalyticsEngineDataPoint, AnalyticsEngineDataset } from '@cloudflare/workers-types/index.ts';
import { type CollectEvent, type DeliveryEvent, NONE, type RejectReason, type RelayObserver, UNKNOWN_SITE } from '../core/observe.js';
import type { AuditEntry, UpstreamCall } from '../core/observe.js';

/** Analytics Engine's limit on an index, in bytes; longer values are cut (at a character boundary). */
export const INDEX_BYTES = 96;

/** The `collect` point's doubles after the three common ones, in column order (`double4` first). */
export const COLLECT_DOUBLES = [
  'items',
  'accepted',
  'duplicate',
  'rejected',
  'retry',
  'rejected_invalid',
  'rejected_not_allowed',
  'rejected_unverified',
  'rejected_platform',
  'identity_failed',
  'rejected_expired',
  'rejected_suppressed',
] as const;

const REASON_COLUMNS: Record<RejectReason, (typeof COLLECT_DOUBLES)[number]> = {
  invalid: 'rejected_invalid',
  not_allowed: 'rejected_not_allowed',
  unverified: 'rejected_unverified',
  platform: 'rejected_platform',
  expired: 'rejected_expired',
  suppressed: 'rejected_suppressed',
};

const encoder = new TextEncoder();

/** `text` cut to at most `bytes` UTF-8 bytes, never inside a character. */
export function clip(text: string, bytes: number = INDEX_BYTES): string {
  if (text.length * 3 <= bytes || encoder.encode(text).length <= bytes) return text;
  let out = '';
  let used = 0;
  for (const char of text) {
    const size = encoder.encode(char).length;
    if (used + size > bytes) break;
    out += char;
    used += size;
  }
  return out;
}

/** The data point for one `/collect` answer. */
export function collectPoint(event: CollectEvent): AnalyticsEngineDataPoint {
  const site = event.site ?? UNKNOWN_SITE;
  const counts: Record<(typeof COLLECT_DOUBLES)[number], number> = {
    items: event.items.length,
    accepted: 0,
    duplicate: 0,
    rejected: 0,
    retry: 0,
    rejected_invalid: 0,
    rejected_not_allowed: 0,
    rejected_unverified: 0,
    rejected_platform: 0,
    identity_failed: event.unverified,
    rejected_expired: 0,
    rejected_suppressed: 0,
  };
  for (const item of event.items) {
    if (item.status in counts) counts[item.status] += 1;
    if (item.status === 'rejected' && item.reason !== undefined && item.reason in REASON_COLUMNS) counts[REASON_COLUMNS[item.reason]] += 1;
  }
  return {
    indexes: [clip(site)],
    blobs: ['collect', site, String(event.status), event.error ?? ''],
    doubles: [1, event.ms, event.status, ...COLLECT_DOUBLES.map((column) => counts[column])],
  };
}

/** The data point for one proxy call. */
export function proxyPoint(entry: AuditEntry): AnalyticsEngineDataPoint {
  const token = entry.token ?? NONE;
  return {
    indexes: [clip(token)],
    blobs: ['proxy', token, String(entry.status), entry.endpoint ?? NONE],
    doubles: [1, entry.ms, entry.status],
  };
}

/**
 * The data point for one call of the queue consumer (or entries it held without a call): what
 * became of its entries. `index1` is the endpoint ID; `blob4` `'held'` or `'resent'` (the
 * ambiguous policy); doubles after the common three: delivered, released, refused (dead letters),
 * ambiguous, and whether a call was made (1) or not (0).
 */
export function deliveryPoint(event: DeliveryEvent): AnalyticsEngineDataPoint {
  return {
    indexes: [clip(event.endpoint)],
    blobs: ['delivery', event.endpoint, String(event.status), event.held ? 'held' : 'resent'],
    doubles: [1, 0, event.status, event.delivered, event.released, event.dead.length, event.ambiguous.length, event.called ? 1 : 0],
  };
}

/** The data point for one call to the platform. */
export function upstreamPoint(call: UpstreamCall): AnalyticsEngineDataPoint {
  return {
    indexes: [clip(call.endpoint)],
    blobs: ['upstream', call.endpoint, String(call.status)],
    doubles: [1, call.ms, call.status],
  };
}

/**
 * An observer writing one data point per event to `dataset`. A dataset that throws (a bad point,
 * a binding gone) never fails the request: the first failure is reported with `console.error`,
 * later ones are dropped silently so a broken binding cannot flood the logs.
 */
export function analyticsObserver(dataset: AnalyticsEngineDataset): Required<RelayObserver> {
  let reported = false;
  const write = (point: () => AnalyticsEngineDataPoint) => {
    try {
      dataset.writeDataPoint(point());
    } catch (error) {
      if (reported) return;
      reported = true;
      console.error(
        JSON.stringify({
          level: 'error',
          ts: new Date().toISOString(),
          kind: 'error',
          error: 'analytics_write_failed',
          cause: { name: error instanceof Error ? error.name : typeof error },
        }),
      );
    }
  };
  return {
    collect: (event) => write(() => collectPoint(event)),
    proxy: (entry) => write(() => proxyPoint(entry)),
    upstream: (call) => write(() => upstreamPoint(call)),
    delivery: (event) => write(() => deliveryPoint(event)),
  };
}
