/**
 * The delivery engine's settings and what the parts of one round share. The engine is one
 * implementation of lease → plan calls → take a slot → send → judge → settle, driven by the Node
 * deliverer's loop (deliverer.ts) and by a Durable Object's alarm on Workers, both through
 * {@link deliverRound} (round.ts).
 * @module
 */
import type { Clock } from '../core/clock.js';
import { entryProves, type SiteConfig } from '../core/sites.js';
import type { Logger } from '../core/logging.js';
import type { DeliveryEvent } from '../core/observe.js';
import type { Upstream } from './caller.js';
import type { Lead } from './lead.js';
import type { CallStep, Leased, Outbox, Pacer, Settlement } from '../state/outbox.js';
import type { AmbiguousPolicy } from '../core/config.js';
import { createReporter, type Report } from './report.js';
import { createSpacer, type Spacer } from './spacer.js';
import { createHolds, type Holds } from './holds.js';
import { DEFAULT_PLATFORM_RATE } from '../state/pace.js';
import { RETRY_MS } from './verdict.js';
import { keepTrying } from './stored.js';
import { LIMITS } from '../../api/index.js';

export interface EngineOptions {
  outbox: Outbox;
  pacer: Pacer;
  upstream: Upstream;
  clock: Clock;
  /** the sites by key: `merge_by` of their calls, their names for metrics */
  sites: ReadonlyMap<string, SiteConfig>;
  ambiguous: AmbiguousPolicy;
  /** who delivers: each lease is named after it (`owner#n`), so two leases of one deliverer never touch each other's entries */
  owner: string;
  /** how long a lease lasts @default 30 000 ms */
  leaseMs?: number;
  /** the longest one platform call may take @default 10 000 ms */
  callTimeoutMs?: number;
  /** how long an entry the platform did not apply (503, unreachable) waits before it goes again; a 429 says its own wait @default 5 000 ms */
  retryMs?: number;
  /** entries leased at once: calls' worth, so merges and activities both fill @default {@link leaseSizeFor} the rate */
  leaseSize?: number;
  /** platform calls in flight at once, each in its own pacer slot @default 4 */
  maxInFlight?: number;
  /** the platform's calls per second for the key (`RELAY_PLATFORM_RATE`): calls leave this far apart @default 10 */
  rate?: number;
  /** told of every call's outcome (metrics, the status page) */
  onDelivery?: ((event: DeliveryEvent) => void) | undefined;
  /** told of entries the platform took (settled delivered): ingest learns their shapes (ingest/shapes.ts `learnLeased`) */
  onTaken?: ((entries: readonly Leased[]) => void) | undefined;
  /** told of entries the platform refused, to charge their visitors; `wholeCall` when the platform refused the call itself (a 4xx) */
  onRefused?: ((entries: readonly Leased[], wholeCall: boolean) => void) | undefined;
  /**
   * told of a call the platform refused as a whole that is cut into parts to find its bad entries:
   * the platform's ban counts it like any refused call, so the sites in it pay (their visitors pay
   * only for the entries found bad, through `onRefused`)
   */
  onCutCall?: ((sites: readonly string[]) => void) | undefined;
  logger?: Logger | undefined;
}

export interface RoundOptions extends EngineOptions {
  /** ms since epoch: no lease is taken and no call starts from then on (calls in flight finish and settle) */
  deadline: number;
  /** the deliverer's lead lock, held over every call (none on a Durable Object: it is alone) */
  lead?: Lead | undefined;
  /** after a partial lease: waits for more entries; false ends the round @default none: the round ends */
  refill?: (() => Promise<boolean>) | undefined;
  /** true once the driver is stopping: nothing more starts */
  stopped?: (() => boolean) | undefined;
  /** waits `ms` of real time, or less when woken (a stop) @default a timer */
  nap?: ((ms: number) => Promise<void>) | undefined;
  /** spaces calls by the time they leave; keep one across rounds @default a new one per round, at `rate` */
  spacer?: Spacer | undefined;
  /** partial calls held back in a backlog, kept across rounds (holds.ts) @default one for the round */
  holds?: Holds | undefined;
}

/** A round's settings with defaults, and what its leases share. */
export interface Engine {
  options: RoundOptions;
  leaseMs: number;
  callTimeoutMs: number;
  retryMs: number;
  leaseSize: number;
  maxInFlight: number;
  mergeBy(site: string): readonly string[];
  /** whether an entry proves its person (breaker.ts, batch.ts) */
  proven(entry: Leased): boolean;
  stopped(): boolean;
  nap(ms: number): Promise<void>;
  /** platform calls in flight, over every lease of the round */
  flights: Set<Promise<void>>;
  spacer: Spacer;
  holds: Holds;
  /** the merge turns of calls answered, given back with the next slot request (slots.ts) */
  answeredTurns: string[];
  /** the pacer's steps of a call and its mark in one store step, where the pacer shares the outbox's transactions (Pacer.stepsWith) */
  step: CallStep | undefined;
  /** settles once the call looking whether it may leave has left, or gone back (slots.ts `waitToLeave`) */
  leaving: Promise<void>;
  log(line: Record<string, unknown>): void;
  report: Report;
  /** settles `settlement` under lease `lease`, trying again after a store failure until `until` (the lease's end; stored.ts) */
  settle(lease: string, settlement: Settlement, until: number): Promise<void>;
}

/** Seconds of the key's calls one lease holds. */
const LEASE_SECONDS = 0.5;

/**
 * Entries one lease takes at `rate` calls a second: half a second of full calls (500 at 10 calls a
 * second, 1,000 from 20), one call at least, 1,000 at most. An item accepted while a lease's calls
 * go waits for the next lease, and then for the calls before its own in that lease: both are
 * about a lease's time, so a lease of a whole second of calls (1,000 at 10) kept an item about a
 * second from the platform even below the key's ceiling. Shorter than half a second, a lease
 * holds too few identifies to fill its merge call (test/relay/pacing-engine.test.ts).
 */
export const leaseSizeFor = (rate: number): number =>
  Math.min(1_000, Math.max(LIMITS.itemsPerRequest, Math.ceil(rate * LIMITS.itemsPerRequest * LEASE_SECONDS)));

const timerNap = (ms: number) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, Math.max(0, ms));
    // Never what keeps a process alive: the server (or the caller) does that.
    (timer as { unref?: () => void }).unref?.();
  });

export function createEngine(options: RoundOptions): Engine {
  const maxInFlight = options.maxInFlight ?? 4;
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1) throw new RangeError(`maxInFlight must be a whole number ≥ 1, got ${maxInFlight}`);
  const { clock, sites, outbox } = options;
  const log = (line: Record<string, unknown>) =>
    options.logger?.({ ts: new Date(clock.now()).toISOString(), kind: 'deliver', method: 'DELIVER', path: '', status: 0, ms: 0, ...line });
  return {
    options,
    leaseMs: options.leaseMs ?? 30_000,
    callTimeoutMs: options.callTimeoutMs ?? 10_000,
    retryMs: options.retryMs ?? RETRY_MS,
    leaseSize: options.leaseSize ?? leaseSizeFor(options.rate ?? DEFAULT_PLATFORM_RATE),
    maxInFlight,
    mergeBy: (site) => sites.get(site)?.mergeBy ?? ['str::email', 'str::ei'],
    proven: (entry) => entryProves(sites, entry),
    stopped: () => options.stopped?.() ?? false,
    nap: options.nap ?? timerNap,
    flights: new Set(),
    spacer: options.spacer ?? createSpacer(options.rate ?? DEFAULT_PLATFORM_RATE),
    holds: options.holds ?? createHolds(),
    answeredTurns: [],
    step: options.pacer.leave === undefined ? undefined : options.pacer.stepsWith?.(outbox),
    leaving: Promise.resolve(),
    log,
    report: createReporter({ clock, sites, onDelivery: options.onDelivery, log }),
    async settle(lease, settlement, until) {
      const { skipped } = await keepTrying(() => outbox.settle(lease, settlement, clock.now()), 'settle', until, clock, log);
      // The lease ran out and another lease took the entries: it settles them, not this one.
      if (skipped > 0) log({ level: 'warn', error: 'lease_lost', skipped });
    },
  };
}
