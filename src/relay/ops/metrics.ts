/**
 * Prometheus metrics for the relay on Node, through prom-client: an observer of the relay's
 * events (observe.ts) that counts them into one registry. Labels carry site names, token names,
 * endpoint IDs, statuses and rejection classes, all bounded by the configuration: never a key,
 * a token, an address or an item id.
 *
 * @example
 * const metrics = createRelayMetrics({ outbox });
 * const relay = createRelay(config, { store, observer: metrics.observer });
 * const { body } = await metrics.render(); // the text format for a scrape
 * @module
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { NONE, type RelayObserver, UNKNOWN_SITE } from '../core/observe.js';
import { OUTBOX_FULL, type OutboxLimits, PEOPLE_BUDGET, UNPROVEN_FULL } from '../core/outbox-limits.js';
import { SEND_MARGIN } from '../state/margin.js';
import type { Outbox } from '../state/outbox.js';

export interface RelayMetricsOptions {
  /** the outbox whose backlog, dead letters and remembered ids the gauges report */
  outbox?: Pick<Outbox, 'stats'>;
  /** the outbox's limits (`RELAY_OUTBOX_MAX…`), reported as `cdp_edge_outbox_limit` */
  limits?: OutboxLimits;
  /** the process's CPU, memory, event-loop lag and GC, prefixed `cdp_edge_` @default true */
  processMetrics?: boolean;
}

/** What serves `GET /metrics`: the metrics in Prometheus's text format. */
export interface MetricsSource {
  render(): Promise<{ contentType: string; body: string }>;
}

export interface RelayMetrics extends MetricsSource {
  observer: RelayObserver;
  registry: Registry;
}

/**
 * How often the event loop's lag is sampled (a timer of its own): prom-client's default of 10 ms
 * woke an idle relay 100 times a second, about 3 ms of its CPU a second; every 100 ms still sees a
 * loop held 100 ms or more each time, and shorter ones in proportion.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function createRelayMetrics(options: RelayMetricsOptions = {}): RelayMetrics {
  const registry = new Registry();
  const registers = [registry];
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'cdp_edge_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });

  const collectRequests = new Counter({
    name: 'cdp_edge_collect_requests_total',
    help: 'POST /collect requests answered, by site and HTTP status',
    labelNames: ['site', 'status'] as const,
    registers,
  });
  const items = new Counter({
    name: 'cdp_edge_items_total',
    help: 'Items of /collect batches by site and result (accepted, duplicate, rejected, retry); rejected ones also by reason class',
    labelNames: ['site', 'result', 'reason'] as const,
    registers,
  });
  const collectLatency = new Histogram({
    name: 'cdp_edge_collect_request_duration_seconds',
    help: 'Time from a /collect request arriving to its answer, by site',
    labelNames: ['site'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const rateLimited = new Counter({
    name: 'cdp_edge_rate_limited_requests_total',
    help: '/collect requests refused with 429 by the visitor or site limit',
    labelNames: ['site'] as const,
    registers,
  });
  const identityFailures = new Counter({
    name: 'cdp_edge_identity_verification_failures_total',
    help: 'Items whose identity could not be verified (rejected under verify=required, and tracks under optional; reduced to one identifier otherwise)',
    labelNames: ['site'] as const,
    registers,
  });
  const upstreamRequests = new Counter({
    name: 'cdp_edge_upstream_requests_total',
    help: 'Calls to the platform by endpoint and HTTP status (0 = no answer: timeout or network)',
    labelNames: ['endpoint', 'status'] as const,
    registers,
  });
  const upstreamLatency = new Histogram({
    name: 'cdp_edge_upstream_request_duration_seconds',
    help: 'Time until the platform answered (or the call failed), by endpoint',
    labelNames: ['endpoint'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const proxyRequests = new Counter({
    name: 'cdp_edge_proxy_requests_total',
    help: 'Proxy calls by token name, endpoint and HTTP status ("(none)" when no valid token or endpoint)',
    labelNames: ['token', 'endpoint', 'status'] as const,
    registers,
  });

  const deadLetters = new Counter({
    name: 'cdp_edge_dead_letters_total',
    help: 'Accepted entries moved to the dead-letter list, by site and reason (refused, invalid, ambiguous)',
    labelNames: ['site', 'reason'] as const,
    registers,
  });
  const ambiguous = new Counter({
    name: 'cdp_edge_ambiguous_entries_total',
    help: 'activities/create entries whose call may or may not have been applied (timeout, lost connection, 500/502/504), by site and what was done (held or resent)',
    labelNames: ['site', 'policy'] as const,
    registers,
  });
  const delivered = new Counter({
    name: 'cdp_edge_delivered_entries_total',
    help: 'Entries the platform took, by endpoint',
    labelNames: ['endpoint'] as const,
    registers,
  });
  const deliveryLatency = new Histogram({
    name: 'cdp_edge_delivery_latency_seconds',
    help: 'Time from an item being accepted to the platform taking it',
    buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
    registers,
  });
  // Bound once: `observe` with no labels makes a labels object, a closure and a pair for every entry
  // (about 18 kB a call of 100); the bound one makes none.
  const deliveryLatencyOf = deliveryLatency.labels();
  // Set by each call the deliverer makes; `max` so processes that deliver nothing (at the base) do not hide the one that does.
  const sendMargin = new Gauge({
    name: 'cdp_edge_platform_send_margin_ratio',
    help: "The send margin the deliverer keeps over the platform's second, as of its last call: 0.03, doubled by each 429 hold up to 0.15, narrowing after 5 quiet minutes",
    aggregator: 'max',
    registers,
  });
  sendMargin.set(SEND_MARGIN);

  const outboxFull = new Counter({
    name: 'cdp_edge_outbox_full_items_total',
    help: 'Items answered retry because the outbox was at a limit (per visitor, per site or in all): the browser keeps them',
    labelNames: ['site'] as const,
    registers,
  });
  const unprovenHeld = new Counter({
    name: 'cdp_edge_unproven_held_items_total',
    help: 'Unproven items answered retry: the outbox had no room for them (their share of the site, or their visitor limit: outbox_share), or the site had created as many people a minute as it allows (people_budget)',
    labelNames: ['site', 'limit'] as const,
    registers,
  });
  if (options.limits !== undefined) {
    const limit = new Gauge({
      name: 'cdp_edge_outbox_limit',
      help: 'The outbox limits: entries waiting per visitor, per site and in all; dead letters kept',
      labelNames: ['scope'] as const,
      registers,
    });
    for (const scope of ['visitor', 'site', 'total', 'dead'] as const) limit.set({ scope }, options.limits[scope]);
  }

  const outbox = options.outbox;
  if (outbox !== undefined) {
    // One read of the outbox per scrape serves every gauge; `max` so processes sharing it are not summed.
    let reading: Promise<Awaited<ReturnType<Outbox['stats']>>> | undefined;
    // A store busy with deliveries must not hold the scrape (the primary of --workers gives up after a few seconds).
    const read = () => {
      reading ??= Promise.race([
        outbox.stats(),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('outbox stats timed out')), 1_000).unref()),
      ]).finally(() => {
        reading = undefined;
      });
      return reading;
    };
    const gauge = (name: string, help: string, pick: (stats: Awaited<ReturnType<Outbox['stats']>>) => number) =>
      new Gauge({
        name,
        help,
        aggregator: 'max',
        registers,
        async collect() {
          const stats = await read().catch(() => undefined);
          if (stats !== undefined) this.set(pick(stats));
        },
      });
    gauge('cdp_edge_store_remembered_ids', 'Item ids remembered for dedupe (the window)', (stats) => stats.remembered);
    gauge('cdp_edge_outbox_pending', 'Accepted entries waiting to be delivered (or being delivered)', (stats) => stats.pending);
    gauge('cdp_edge_outbox_dead_letters', 'Entries in the dead-letter list (`cdp-edge outbox list`)', (stats) => stats.dead);
    gauge('cdp_edge_outbox_dead_letters_expired', 'Dead letters removed because their window ended, since the store was created', (stats) => stats.expired);
    gauge(
      'cdp_edge_outbox_dead_letters_cut',
      'Dead letters removed, oldest first, because the list was over its limit, since the store was created',
      (stats) => stats.cut,
    );
  }

  const observer: RelayObserver = {
    collect(event) {
      const site = event.site ?? UNKNOWN_SITE;
      collectRequests.inc({ site, status: event.status });
      collectLatency.observe({ site }, event.ms / 1000);
      if (event.error === 'rate_limited') rateLimited.inc({ site });
      if (event.unverified > 0) identityFailures.inc({ site }, event.unverified);
      // Counted within the request first, so each label set is looked up once per request, not once per item.
      const results = new Map<string, { result: string; reason: string | undefined; count: number }>();
      let full = 0;
      let share = 0;
      let budget = 0;
      for (const item of event.items) {
        const key = item.reason === undefined ? item.status : `${item.status}\u0000${item.reason}`;
        const counted = results.get(key);
        if (counted === undefined) results.set(key, { result: item.status, reason: item.reason, count: 1 });
        else counted.count++;
        if (item.status !== 'retry' || item.error === undefined) continue;
        if (item.error.startsWith(OUTBOX_FULL)) full++;
        if (item.error.startsWith(UNPROVEN_FULL)) share++;
        if (item.error.startsWith(PEOPLE_BUDGET)) budget++;
      }
      for (const { result, reason, count } of results.values()) items.inc(reason === undefined ? { site, result } : { site, result, reason }, count);
      if (full > 0) outboxFull.inc({ site }, full);
      if (share > 0) unprovenHeld.inc({ site, limit: 'outbox_share' }, share);
      if (budget > 0) unprovenHeld.inc({ site, limit: 'people_budget' }, budget);
    },
    proxy(entry) {
      proxyRequests.inc({ token: entry.token ?? NONE, endpoint: entry.endpoint ?? NONE, status: entry.status });
    },
    delivery(event) {
      if (event.margin !== undefined) sendMargin.set(event.margin);
      if (event.delivered > 0) delivered.inc({ endpoint: event.endpoint }, event.delivered);
      for (const ms of event.latencies) deliveryLatencyOf.observe(ms / 1000);
      for (const letter of event.dead) deadLetters.inc({ site: letter.site, reason: reasonClass(letter.reason) });
      const policy = event.held ? 'held' : 'resent';
      for (const entry of event.ambiguous) {
        ambiguous.inc({ site: entry.site, policy });
        if (event.held) deadLetters.inc({ site: entry.site, reason: 'ambiguous' });
      }
    },
    upstream(call) {
      upstreamRequests.inc({ endpoint: call.endpoint, status: call.status });
      upstreamLatency.observe({ endpoint: call.endpoint }, call.ms / 1000);
    },
  };

  return {
    observer,
    registry,
    render: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
  };
}

/** A dead letter's reason as a bounded label: its class before the colon (`refused: …` → `refused`). */
const reasonClass = (reason: string): string => {
  const cut = reason.indexOf(':');
  return (cut < 0 ? reason : reason.slice(0, cut)).slice(0, 32);
};
