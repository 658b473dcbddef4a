/**
 * What the engine tells of each call: a {@link DeliveryEvent} for metrics and the status page,
 * and a log line for any call that did not simply deliver.
 * @module
 */
import type { Clock } from '../core/clock.js';
import type { SiteConfig } from '../core/sites.js';
import type { DeliveryEvent } from '../core/observe.js';
import type { CallEndpoint } from './batch.js';
import type { Leased } from '../state/outbox.js';
import type { Verdict } from './verdict.js';

/** One call's outcome (or entries held without a call, `called: false`). */
export interface Reported {
  endpoint: CallEndpoint;
  status: number;
  called: boolean;
  delivered: readonly Leased[];
  dead: Verdict['dead'];
  released: readonly Leased[];
  ambiguous: readonly Leased[];
  held: boolean;
  /** how many times the call was counted again in the shared window for going late (deliver/slots.ts) */
  lateAsks?: number;
  /** the send margin the deliverer's spacer keeps once the call was answered (deliver/spacer.ts), when one is kept across rounds */
  margin?: number | undefined;
}

export type Report = (outcome: Reported) => void;

/** Error text for a log line: the error's name and message, never a stack. */
export const describe = (error: unknown): string => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

export function createReporter(options: {
  clock: Clock;
  sites: ReadonlyMap<string, SiteConfig>;
  onDelivery?: ((event: DeliveryEvent) => void) | undefined;
  log: (line: Record<string, unknown>) => void;
}): Report {
  const { clock, sites, log } = options;
  const siteName = (site: string) => sites.get(site)?.name ?? site;
  return (outcome) => {
    const now = clock.now();
    const event: DeliveryEvent = {
      at: now,
      endpoint: outcome.endpoint,
      status: outcome.status,
      called: outcome.called,
      delivered: outcome.delivered.length,
      released: outcome.released.length,
      dead: outcome.dead.map(({ entry, reason, status }) => ({ site: siteName(entry.site), id: entry.id, reason, status })),
      ambiguous: outcome.ambiguous.map((entry) => ({ site: siteName(entry.site), id: entry.id })),
      held: outcome.held,
      latencies: outcome.delivered.map((entry) => now - entry.accepted),
      ...(outcome.lateAsks === undefined ? {} : { lateAsks: outcome.lateAsks }),
      ...(outcome.margin === undefined ? {} : { margin: outcome.margin }),
    };
    options.onDelivery?.(event);
    if (event.dead.length > 0 || event.ambiguous.length > 0 || (outcome.called && outcome.status !== 200)) {
      log({
        level: event.dead.length > 0 || event.ambiguous.length > 0 ? 'warn' : 'info',
        path: `/v1/${outcome.endpoint}`,
        status: outcome.status,
        delivered: event.delivered,
        released: event.released,
        dead: event.dead.length,
        ambiguous: event.ambiguous.length,
        ...(event.ambiguous.length > 0 ? { policy: outcome.held ? 'hold' : 'resend' } : {}),
      });
    }
  };
}
