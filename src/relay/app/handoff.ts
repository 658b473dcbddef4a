/**
 * Where the relay hands accepted items: a queue (Workers with a queue bound: its consumer fills the
 * outbox), or the outbox a deliverer drains (in this process on Node; on Workers, each outbox
 * object's alarm).
 * @module
 */
import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import type { RelayConfig } from '../core/config.js';
import { chargeDelivered, type RateLimiter } from '../core/limits.js';
import type { Logger } from '../core/logging.js';
import type { RelayObserver } from '../core/observe.js';
import type { Upstream } from '../deliver/caller.js';
import { createDeliverer, type Deliverer } from '../deliver/deliverer.js';
import { outboxHandoff, type Handoff } from '../ingest/handoff.js';
import { learnLeased, type Shapes } from '../ingest/shapes.js';
import { createMemoryOutbox } from '../state/memory-outbox.js';
import type { Leased, Outbox, Pacer } from '../state/outbox.js';
import { queueHandoff, type Enqueue } from '../workers/handoff.js';

export interface HandoffChoice {
  config: RelayConfig;
  limiter: RateLimiter;
  upstream: Upstream;
  pacer: Pacer;
  clock: Clock;
  observer: Required<RelayObserver>;
  logger: Logger;
  enqueue?: Enqueue | undefined;
  outbox?: Outbox | undefined;
  deliver?: boolean | undefined;
  onRefused?: ((entries: readonly Leased[], wholeCall: boolean) => void) | undefined;
  /** the shapes ingest checks items against, which a deliverer here teaches (ingest/shapes.ts; Workers: workers/shapes.ts) @default this process's */
  shapes?: Shapes | undefined;
  /** how old the pending count the idle room reads may be (ingest/idle-room.ts) */
  pendingMaxAgeMs?: number | undefined;
}

/** The handoff, and the outbox and deliverer behind it when there is one (the deliverer started). */
export function chooseHandoff(choice: HandoffChoice): { handoff: Handoff; outbox?: Outbox; deliverer?: Deliverer } {
  const { config, limiter, upstream, pacer, clock, observer, logger } = choice;
  if (choice.enqueue) return { handoff: queueHandoff(choice.enqueue) };
  const outbox = choice.outbox ?? createMemoryOutbox();
  if (!(choice.deliver ?? true))
    return {
      handoff: outboxHandoff(
        outbox,
        config.windowMs,
        config.outboxLimits,
        undefined,
        config.unproven.share,
        config.platformRate,
        config.outboxIdleSeconds,
        choice.pendingMaxAgeMs,
      ),
      outbox,
    };
  const deliverer = createDeliverer({
    outbox,
    pacer,
    upstream,
    // Leases and pacing run on real time: an injected clock moves ingest's view (the window), not the platform's pace.
    clock: systemClock,
    sites: config.sites,
    waitMs: config.deliveryWaitMs,
    leaseMs: config.deliveryLeaseMs,
    leadTtlMs: config.deliveryLeadMs,
    retryMs: config.deliveryRetryMs,
    callTimeoutMs: Math.max(500, Math.min(10_000, config.budgetMs)),
    rate: config.platformRate,
    ambiguous: config.ambiguous,
    onDelivery: observer.delivery,
    // Ingest's clock, as ingest asks whether a shape is known on it (guard.ts `heldByGuard`).
    onTaken: choice.shapes && ((entries) => learnLeased(choice.shapes!, entries, clock.now())),
    // What the platform refused after acceptance counts against its visitors, one per entry; the
    // site pays only for a call the platform refused as a whole (what its ban counts), not for
    // one bad entry among good ones.
    onRefused: (entries, wholeCall) => {
      choice.onRefused?.(entries, wholeCall);
      void chargeDelivered(limiter, entries, wholeCall, clock.now()).catch(() => {});
    },
    // A call refused as a whole and cut into parts counts towards the ban like any other: its sites pay.
    onCutCall: (sites) =>
      void chargeDelivered(
        limiter,
        sites.map((site) => ({ site, visitor: '' })),
        true,
        clock.now(),
      ).catch(() => {}),
    logger,
  });
  deliverer.start();
  return {
    handoff: outboxHandoff(
      outbox,
      config.windowMs,
      config.outboxLimits,
      (count) => deliverer.kick(count),
      config.unproven.share,
      config.platformRate,
      config.outboxIdleSeconds,
      choice.pendingMaxAgeMs,
    ),
    outbox,
    deliverer,
  };
}
