/**
 * POST /collect from arrival to answer: the batch through `collect`, anything unexpected turned
 * into a 503 that keeps every item in the browser, then the answer's headers, its event for the
 * observers and its log lines (one per request; one per item at `debug`).
 * @module
 */
import type { Clock } from '../core/clock.js';
import { corsHeaders, anySiteAllows } from '../core/cors.js';
import { describeError, RelayHttpError, type HttpAnswer } from '../core/errors.js';
import type { Logger, LogLine } from '../core/logging.js';
import type { ObservedItem, RelayObserver } from '../core/observe.js';
import type { SiteConfig } from '../core/sites.js';
import type { CollectRequest } from './body.js';
import { collect } from './collect.js';
import type { CollectContext, CollectOutcome } from './context.js';
import type { ClientInfo } from './enrich.js';

/** A /collect answer: status, headers and the JSON body as text. */
export type CollectHttpAnswer = HttpAnswer & { body: string };

export interface CollectAnswererOptions {
  context: CollectContext;
  sites: readonly SiteConfig[];
  clock: Clock;
  observer: RelayObserver;
  logger: Logger;
  /** whether to log one line per item too */
  debug: boolean;
  /** the configured /collect path, as logged */
  path: string;
  /** what handles a request @default the browsers' /collect (collect.ts); the server door gives its own (server.ts) */
  handle?: (request: CollectRequest, info: ClientInfo, named: { site?: string }) => Promise<CollectOutcome>;
}

/** The shortest and the longest `Retry-After` (seconds) of a /collect that met something unexpected. */
export const TROUBLE_RETRY_AFTER = { min: 5, max: 300 } as const;

/**
 * The `Retry-After` of a /collect that met something unexpected (the state store unreachable, a
 * commit not synced) at `now`, while such failures have lasted since `since`: as long as they have
 * lasted so far, from 5 s to 5 min. A browser waits what it is told (docs/snippet.md), so through an
 * outage its retries thin out the way a doubling backoff would, and a fault of a moment costs a
 * browser only 5 s.
 */
export const troubleRetryAfter = (since: number, now: number): number =>
  Math.min(TROUBLE_RETRY_AFTER.max, Math.max(TROUBLE_RETRY_AFTER.min, Math.ceil((now - since) / 1000)));

/** The log line's counts of `items`: per result status (`{accepted: 3, duplicate: 1}`), and per rejection class when some were rejected. */
function counted(items: readonly ObservedItem[]): { results: Record<string, number>; reasons?: Record<string, number> } {
  const results: Record<string, number> = {};
  let reasons: Record<string, number> | undefined;
  for (const { status, reason } of items) {
    results[status] = (results[status] ?? 0) + 1;
    if (reason !== undefined) {
      reasons ??= {};
      reasons[reason] = (reasons[reason] ?? 0) + 1;
    }
  }
  return reasons === undefined ? { results } : { results, reasons };
}

/** The POST /collect handler; the Node entry calls it straight from node:http. */
export function createCollectAnswerer(options: CollectAnswererOptions): (request: CollectRequest, info: ClientInfo) => Promise<CollectHttpAnswer> {
  const { context, sites, clock, observer, logger, debug, path } = options;
  const handle = options.handle ?? ((request, info, named) => collect(context, request, info, named));
  /** Since when every /collect met something unexpected: reset by the next one that did not. */
  let troubleSince: number | undefined;
  return async (request, info) => {
    const started = clock.now();
    const origin = request.origin;
    let outcome: CollectOutcome;
    let unexpected: unknown;
    const seen: { site?: string } = {};
    try {
      outcome = await handle(request, info, seen);
      troubleSince = undefined;
    } catch (caught) {
      // Anything unexpected (the state store unreachable, say) happened before an item was final:
      // 503 + Retry-After keeps every item in the browser.
      if (!(caught instanceof RelayHttpError)) troubleSince ??= started;
      const error =
        caught instanceof RelayHttpError
          ? caught
          : new RelayHttpError(
              503,
              'relay_unavailable',
              'The relay could not handle the batch right now; nothing was lost: retry after the Retry-After seconds.',
              { retryAfter: troubleRetryAfter(troubleSince ?? started, started), cause: caught },
            );
      outcome = { status: error.status, body: error.body, headers: error.headers, ...(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter }) };
      if (!(caught instanceof RelayHttpError)) {
        outcome.warning = caught instanceof Error ? caught.name : 'error';
        unexpected = caught;
      }
    }
    const headers = corsHeaders(origin, origin !== undefined && anySiteAllows(origin, sites));
    if (outcome.headers !== undefined) Object.assign(headers, outcome.headers);
    headers['Content-Type'] = 'application/json';
    headers['Cache-Control'] = 'no-store';
    if (outcome.retryAfter !== undefined) headers['Retry-After'] = String(outcome.retryAfter);
    const error = outcome.status === 200 ? undefined : (outcome.body as { error?: { code?: string } }).error?.code;
    // The answer's own results are what observers see: each carries its status, and its reason and error when it has them.
    const items: ObservedItem[] = outcome.results ?? [];
    const ms = clock.now() - started;
    const ts = new Date(started).toISOString();
    outcome.site ??= seen.site;
    observer.collect?.({ at: started, site: outcome.site, status: outcome.status, error, ms, items, unverified: outcome.unverified ?? 0 });
    const line: LogLine = { ts, kind: 'collect', method: 'POST', path, status: outcome.status, ms };
    if (outcome.site !== undefined) {
      line.site = outcome.site;
      line.items = outcome.items ?? 0;
      const { results, reasons } = counted(items);
      line.results = results;
      if (reasons !== undefined) line.reasons = reasons;
    }
    if (error !== undefined) line.error = error;
    if (outcome.warning !== undefined) line['warning'] = outcome.warning;
    if (unexpected !== undefined) line['cause'] = describeError(unexpected);
    logger(line);
    if (debug) {
      for (const { status, id, reason, error: why } of items)
        logger({
          level: 'debug',
          ts,
          kind: 'item',
          method: 'POST',
          path,
          status: outcome.status,
          ms,
          site: outcome.site,
          result: status,
          id,
          ...(reason === undefined ? {} : { reason }),
          ...(why === undefined ? {} : { error: why }),
        });
    }
    return { status: outcome.status, headers, body: JSON.stringify(outcome.body) };
  };
}
