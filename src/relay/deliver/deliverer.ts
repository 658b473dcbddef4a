/**
 * The deliverer: drains the outbox to the platform in full, paced calls. One deliverer drains a
 * deployment at a time (the outbox's `lead` lock, renewed; a standby takes over when the leader
 * dies), so ordering and pacing need no coordination of leases between processes.
 *
 * One cycle: wait for entries (a partial call waits at most `waitMs` for more), lease the oldest,
 * plan calls (merges first, then activities), and for each call take a pacer slot, send it once
 * within what the lease has left, and settle what its answer proves (`verdict.ts`). Up to
 * `maxInFlight` calls overlap, each in its own slot, so a slow platform still gets its pace; a
 * lease's merges are answered before its activities go, and the next lease starts once every call
 * of this one has started. What an answer proves:
 * - delivered → settled (the id stays remembered for the window);
 * - refused per entry (4xx details, an `invalid` entry) → dead letter with the reason;
 * - refused as a whole without details → halved until the bad entries are alone (bounded);
 * - not applied (429, 503, unreachable) → released for later; a 429 holds the whole deployment;
 * - ambiguous (timeout, lost connection, 500/502/504): merges are sent again (merging the same
 *   fields again changes nothing); activities are held in the dead-letter list, reason
 *   `ambiguous` (or released with `RELAY_AMBIGUOUS=resend`: at least once).
 * A send is counted (`Outbox.sending`) right before each call, on that call's entries only. An
 * entry leased with `attempts > 0` was in a call of a deliverer that died before it heard the
 * answer: its outcome is unknown too, and the same policy applies. The rest of a dead deliverer's
 * lease was never sent and goes as if new.
 *
 * Identifies go before the tracks of the same browser: a track whose browser has an identify in
 * the lease that was not delivered is released, not sent.
 * @module
 */
import type { SiteConfig } from '../config.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logging.js';
import type { DeliveryEvent } from '../observe.js';
import { halves, only, planCalls, bodyOf, type Call } from './batch.js';
import type { Upstream } from './caller.js';
import type { Leased, Outbox, Pacer, Settlement } from './outbox.js';
import { AMBIGUOUS_REASON, afterAmbiguous, type AmbiguousPolicy } from './policy.js';
import { callOnce } from './send.js';
import { judge, type Verdict } from './verdict.js';

export interface DelivererOptions {
  outbox: Outbox;
  pacer: Pacer;
  upstream: Upstream;
  clock: Clock;
  /** the sites by key: `merge_by` of their calls, their names for metrics */
  sites: ReadonlyMap<string, SiteConfig>;
  /** how long a partial call waits for more entries (ms) */
  waitMs: number;
  ambiguous: AmbiguousPolicy;
  /** this process's name in leases and the lead lock @default a random one */
  owner?: string;
  /** how long a lease lasts @default 30 000 ms */
  leaseMs?: number;
  /** the longest one platform call may take @default 10 000 ms */
  callTimeoutMs?: number;
  /** entries leased at once: calls' worth, so merges and activities both fill @default 1000 */
  leaseSize?: number;
  /** platform calls in flight at once, each in its own pacer slot: overlapping calls keep the budget full when calls are slow @default 4 */
  maxInFlight?: number;
  /** the lead lock's lifetime; a standby takes over this long after the leader died @default 5 000 ms */
  leadTtlMs?: number;
  /** told of every call's outcome (metrics, the status page) */
  onDelivery?: (event: DeliveryEvent) => void;
  /** told of entries the platform refused, to charge their visitors; `wholeCall` when the platform refused the call itself (a 4xx) */
  onRefused?: (entries: readonly Leased[], wholeCall: boolean) => void;
  logger?: Logger;
}

export interface Deliverer {
  /** this deliverer's name in the outbox */
  readonly owner: string;
  start(): void;
  /** Ingest accepted `count` items: a deliverer waiting to fill a call looks again. */
  kick(count?: number): void;
  /** Resolves once nothing is pending in the outbox and no call is in flight (tests, a graceful stop's report). */
  drained(options?: { timeoutMs?: number }): Promise<void>;
  /** Finishes the call in flight, settles, releases its other leases and the lead lock. */
  stop(): Promise<void>;
}

/** Leases delivered at once: the next one's calls start while this one's last answers come back. */
const MAX_ACTIVE_LEASES = 2;
/** Halving a refused call stops after this many levels (100 entries → single entries in 7). */
const MAX_SPLIT_DEPTH = 7;
/** Time kept free at the end of a lease to settle after the call's timeout. */
const SETTLE_MARGIN_MS = 2_000;
/** A call is not started with less time than this left on its lease. */
const MIN_CALL_MS = 1_000;
/** The pacer's wait a leased entry sits out; longer (a 429 hold), the entries go back to the outbox. */
const MAX_PACER_WAIT_MS = 2_000;

/** What the calls of one lease share while they overlap. */
interface LeaseRun {
  expires: number;
  /** browsers whose identify in this lease was not delivered: their tracks wait */
  blocked: Set<string>;
  /** the blocked browsers of the leases still being delivered when this one began */
  earlier: readonly Set<string>[];
  /** entries going back to the outbox at the end of the lease, not before `releaseAt` */
  released: Leased[];
  releaseAt: number;
  /** set once the platform asked to wait (or the lease runs short): no further call starts */
  stopAt: { notBefore: number } | undefined;
}

export function createDeliverer(options: DelivererOptions): Deliverer {
  const { outbox, pacer, upstream, clock, sites } = options;
  // The process id (where there is one) tells an operator which process leads.
  const pid = (globalThis as { process?: { pid?: number } }).process?.pid;
  const owner = options.owner ?? `deliverer-${pid ?? 0}-${crypto.randomUUID().slice(0, 8)}`;
  const leaseMs = options.leaseMs ?? 30_000;
  const callTimeoutMs = options.callTimeoutMs ?? 10_000;
  const leaseSize = options.leaseSize ?? 1_000;
  const leadTtlMs = options.leadTtlMs ?? 5_000;
  const maxInFlight = options.maxInFlight ?? 4;
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1) throw new RangeError(`maxInFlight must be a whole number ≥ 1, got ${maxInFlight}`);
  const mergeBy = (site: string) => sites.get(site)?.mergeBy ?? ['str::email', 'str::ei'];
  const siteName = (site: string) => sites.get(site)?.name ?? site;

  let running: Promise<void> | undefined;
  let stopping = false;
  /** the leases being delivered: at most {@link MAX_ACTIVE_LEASES}, overlapping */
  const active = new Set<Promise<void>>();
  /** the blocked browsers of each lease being delivered, for the leases that overlap it */
  const leaseBlocks = new Set<Set<string>>();
  /** platform calls in flight, over every lease */
  const flights = new Set<Promise<void>>();
  let leading = false;
  let leadRenewAt = 0;
  /** items accepted in this process since the last lease, and when the first of them came */
  let kicked = 0;
  let firstKickAt: number | undefined;
  let wake: (() => void) | undefined;
  /** a drained() caller wants the next lease now, without waiting to fill */
  let hurry = 0;

  const log = (line: Record<string, unknown>) =>
    options.logger?.({ ts: new Date(clock.now()).toISOString(), kind: 'deliver', method: 'DELIVER', path: '', status: 0, ms: 0, ...line });

  /** Sleeps `ms` (real time), or less when kicked or stopped. */
  function nap(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.max(0, ms));
      // Never what keeps a process alive: the server (or the caller) does that.
      (timer as { unref?: () => void }).unref?.();
      function done() {
        clearTimeout(timer);
        if (wake === done) wake = undefined;
        resolve();
      }
      wake = done;
    });
  }

  async function keepLead(): Promise<boolean> {
    const now = clock.now();
    if (leading && now < leadRenewAt) return true;
    try {
      leading = await outbox.lead(owner, now, leadTtlMs);
    } catch (error) {
      leading = false;
      log({ level: 'error', error: 'lead_failed', cause: String(error) });
    }
    leadRenewAt = now + leadTtlMs / 3;
    return leading;
  }

  /** Waits until a call is worth leasing for: enough accepted here, the oldest waited `waitMs`, or a poll's worth of time. */
  async function waitToFill(): Promise<void> {
    if (hurry > 0 || options.waitMs === 0) return;
    const started = Date.now();
    for (;;) {
      if (stopping || hurry > 0 || kicked >= 100) return;
      const since = firstKickAt ?? started;
      const left = since + options.waitMs - Date.now();
      if (left <= 0) return;
      await nap(left);
    }
  }

  async function loop(): Promise<void> {
    while (!stopping) {
      if (!(await keepLead())) {
        await nap(leadTtlMs / 3);
        continue;
      }
      await waitToFill();
      if (stopping) break;
      kicked = 0;
      firstKickAt = undefined;
      let leased: Leased[] = [];
      try {
        // Leases overlap: the next is taken once every call of this one has started (its merges
        // answered), so the budget never idles while the last answers of a lease come back.
        while (active.size >= MAX_ACTIVE_LEASES) await Promise.race(active);
        leased = await outbox.lease(owner, leaseSize, clock.now(), leaseMs);
        if (leased.length > 0) {
          let started!: () => void;
          const allStarted = new Promise<void>((resolve) => {
            started = resolve;
          });
          const previous = [...leaseBlocks];
          const run: Promise<void> = deliver(leased, leased.length === leaseSize, previous, started)
            .catch((error: unknown) => {
              log({ level: 'error', error: 'delivery_failed', cause: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
              return nap(1_000);
            })
            .finally(() => active.delete(run));
          active.add(run);
          await Promise.race([allStarted, run]);
        }
      } catch (error) {
        log({ level: 'error', error: 'delivery_failed', cause: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
        await nap(1_000);
      }
      // Nothing there: wait for the next kick or poll; a full lease: a backlog, go on at once.
      if (leased.length === 0) {
        if (hurry > 0) hurry = 0;
        await nap(options.waitMs > 0 ? options.waitMs : 50);
      }
    }
  }

  /** Delivers one lease; `full` when the outbox had more than it gave (a backlog). */
  async function deliver(leased: Leased[], full: boolean, earlier: readonly Set<string>[], started: () => void): Promise<void> {
    const expires = clock.now() + leaseMs;
    // Entries a dead deliverer may have sent: merges go again, activities follow the policy.
    const going: Leased[] = [];
    const heldAtLease: Leased[] = [];
    for (const entry of leased) {
      if (entry.attempts > 0 && afterAmbiguous(entry.kind === 'activity' ? 'activities/create' : 'person/merge', options.ambiguous) === 'hold')
        heldAtLease.push(entry);
      else going.push(entry);
    }
    if (heldAtLease.length > 0) {
      await settle({ delivered: [], released: [], dead: heldAtLease.map((entry) => ({ seq: entry.seq, reason: AMBIGUOUS_REASON, status: 0 })) });
      report({ endpoint: 'activities/create', status: 0, calls: [], delivered: [], dead: [], released: [], ambiguous: heldAtLease, held: true });
    }

    const calls = planCalls(going, mergeBy);
    // In a backlog, a last partial activities call waits for the next lease, where it fills.
    const last = calls.at(-1);
    if (full && last !== undefined && last.endpoint === 'activities/create' && last.entries.length < 100 && calls.length > 1) calls.pop();
    const sent = new Set(calls.flatMap((call) => call.entries.map((entry) => entry.seq)));
    const unplanned = going.filter((entry) => !sent.has(entry.seq));

    /** browsers whose identify in this lease was not delivered: their tracks wait */
    const blocked = new Set<string>();
    const state: LeaseRun = { expires, blocked, earlier, released: [...unplanned], releaseAt: clock.now(), stopAt: undefined };
    leaseBlocks.add(blocked);
    try {
      // Merges first, all answered, then the activities: a track never goes before its browser's
      // identify. Within each, calls overlap (up to `maxInFlight`), each in its own pacer slot.
      await runCalls(
        calls.filter((call) => call.endpoint === 'person/merge'),
        state,
      );
      await runCalls(
        calls.filter((call) => call.endpoint === 'activities/create'),
        state,
        started,
      );
      if (state.released.length > 0) {
        await settle({ delivered: [], released: state.released.map((entry) => ({ seq: entry.seq, notBefore: state.releaseAt })), dead: [] });
      }
    } finally {
      leaseBlocks.delete(blocked);
      started();
    }
  }

  /**
   * Sends `calls` with up to `maxInFlight` in flight: each takes its pacer slot and is marked
   * `sending` right before it goes, in plan order. Returns once every call started here has been
   * answered and settled (a stop waits for them).
   */
  async function runCalls(calls: readonly Call[], state: LeaseRun, started?: () => void): Promise<void> {
    const queue: { call: Call; depth: number }[] = calls.map((call) => ({ call, depth: 0 }));
    const inFlight = new Set<Promise<void>>();
    let failure: unknown;
    try {
      while (queue.length > 0 || inFlight.size > 0) {
        if (failure !== undefined) break;
        if (queue.length === 0) {
          // Every call of the lease has started: the next lease may begin.
          started?.();
          await Promise.race(inFlight);
          continue;
        }
        // The halves of a refused call go one at a time: each answer decides what is halved next.
        if (queue[0]!.depth > 0 && inFlight.size > 0) {
          await Promise.race(inFlight);
          continue;
        }
        if (flights.size >= maxInFlight) {
          await Promise.race(flights);
          continue;
        }
        const { call: planned, depth } = queue.shift()!;
        let call = planned;
        if (call.endpoint === 'activities/create') {
          // Tracks wait while their browser's identify was not delivered, in this lease or one still running.
          const isBlocked = (browser: string) => state.blocked.has(browser) || state.earlier.some((set) => set.has(browser));
          if (call.entries.some((entry) => isBlocked(entry.browser))) {
            state.released.push(...call.entries.filter((entry) => isBlocked(entry.browser)));
            call = only(call, (entry) => !isBlocked(entry.browser));
            if (call.entries.length === 0) continue;
          }
        }
        if (state.stopAt !== undefined) {
          state.released.push(...call.entries);
          continue;
        }
        // A slot of the deployment's budget; a long wait (a 429 hold) sends the entries back instead.
        const slot = await takeSlot();
        const left = state.expires - clock.now() - SETTLE_MARGIN_MS;
        if (slot !== 0 || left < MIN_CALL_MS || stopping || state.stopAt !== undefined) {
          state.stopAt ??= { notBefore: clock.now() + Math.max(slot, 0) };
          state.releaseAt = Math.max(state.releaseAt, state.stopAt.notBefore);
          state.released.push(...call.entries);
          continue;
        }
        // A send is counted as started only now, on this call's entries: a deliverer that dies
        // leaves the rest of its lease never-sent (attempts unchanged), not ambiguous.
        const marked = new Set(
          await outbox.sending(
            owner,
            call.entries.map((entry) => entry.seq),
            clock.now(),
          ),
        );
        if (marked.size < call.entries.length) {
          // Our lease ran out: another deliverer may hold those entries now; they are not ours to send.
          log({ level: 'warn', error: 'lease_lost', skipped: call.entries.length - marked.size });
          call = only(call, (entry) => marked.has(entry.seq));
          if (call.entries.length === 0) continue;
        }
        const going = call;
        const flight: Promise<void> = sendAndSettle(going, depth, left, state, queue)
          .catch((error: unknown) => {
            failure ??= error;
          })
          .finally(() => {
            inFlight.delete(flight);
            flights.delete(flight);
          });
        inFlight.add(flight);
        flights.add(flight);
      }
    } finally {
      // Never leave a call unanswered behind us: its settle is ours to do.
      await Promise.allSettled([...inFlight]);
    }
    if (failure !== undefined) throw failure;
  }

  /** Sends one call, settles what its answer proves; a refused call's halves go back to the front of `queue`. */
  async function sendAndSettle(call: Call, depth: number, left: number, state: LeaseRun, queue: { call: Call; depth: number }[]): Promise<void> {
    const started = clock.now();
    const outcome = await callOnce(upstream, call.endpoint, bodyOf(call), { timeoutMs: Math.min(callTimeoutMs, left), paced: true });
    const canSplit = call.entries.length > 1 && depth < MAX_SPLIT_DEPTH;
    const verdict = judge(call, outcome, canSplit, clock.now());
    if (outcome.kind === 'refused' && canSplit && verdict.dead.length === 0) {
      // Refused as a whole without per-entry details: halve until the bad entries are alone.
      const [a, b] = halves(call);
      queue.unshift({ call: a, depth: depth + 1 }, { call: b, depth: depth + 1 });
      report({ endpoint: call.endpoint, status: outcome.status, calls: [started], delivered: [], dead: [], released: [], ambiguous: [], held: false });
      return;
    }
    if (call.endpoint === 'person/merge') {
      for (const entry of call.entries) if (!verdict.delivered.includes(entry)) state.blocked.add(entry.browser);
    }
    // The platform is in trouble (or asked to wait): the rest of the lease goes back, in order.
    if (outcome.kind === 'unapplied' || outcome.kind === 'ambiguous') {
      state.stopAt ??= { notBefore: verdict.notBefore };
      state.releaseAt = Math.max(state.releaseAt, verdict.notBefore);
    }
    const held = afterAmbiguous(call.endpoint, options.ambiguous) === 'hold';
    const part: Settlement = {
      delivered: verdict.delivered.map((entry) => entry.seq),
      released: [...verdict.released, ...(held ? [] : verdict.ambiguous)].map((entry) => ({ seq: entry.seq, notBefore: verdict.notBefore })),
      dead: [
        ...verdict.dead.map(({ entry, reason, status }) => ({ seq: entry.seq, reason, status })),
        ...(held ? verdict.ambiguous.map((entry) => ({ seq: entry.seq, reason: AMBIGUOUS_REASON, status: outcome.status })) : []),
      ],
    };
    await settle(part);
    const refused = verdict.dead.map(({ entry }) => entry);
    if (refused.length > 0) options.onRefused?.(refused, outcome.kind === 'refused');
    report({
      endpoint: call.endpoint,
      status: outcome.status,
      calls: [started],
      delivered: verdict.delivered,
      dead: verdict.dead,
      released: verdict.released,
      ambiguous: verdict.ambiguous,
      held,
    });
  }

  /** Waits for a pacer slot: 0 once taken, else how long the budget is held (the caller gives up the lease). */
  async function takeSlot(): Promise<number> {
    for (;;) {
      const wait = await pacer.take(clock.now(), 'deliver');
      if (wait === 0) return 0;
      if (wait > MAX_PACER_WAIT_MS || stopping) return wait;
      await nap(wait);
    }
  }

  async function settle(settlement: Settlement): Promise<void> {
    const { skipped } = await outbox.settle(owner, settlement, clock.now());
    // Our lease ran out and another deliverer took the entries: it settles them, not us.
    if (skipped > 0) log({ level: 'warn', error: 'lease_lost', skipped });
  }

  function report(outcome: {
    endpoint: Call['endpoint'];
    status: number;
    calls: number[];
    delivered: Leased[];
    dead: Verdict['dead'];
    released: Leased[];
    ambiguous: Leased[];
    held: boolean;
  }): void {
    const event: DeliveryEvent = {
      at: clock.now(),
      endpoint: outcome.endpoint,
      status: outcome.status,
      called: outcome.calls.length > 0,
      delivered: outcome.delivered.length,
      released: outcome.released.length,
      dead: outcome.dead.map(({ entry, reason, status }) => ({ site: siteName(entry.site), id: entry.id, reason, status })),
      ambiguous: outcome.ambiguous.map((entry) => ({ site: siteName(entry.site), id: entry.id })),
      held: outcome.held,
      latencies: outcome.delivered.map((entry) => clock.now() - entry.accepted),
    };
    options.onDelivery?.(event);
    if (event.dead.length > 0 || event.ambiguous.length > 0 || (outcome.calls.length > 0 && outcome.status !== 200)) {
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
  }

  return {
    owner,
    start() {
      if (running !== undefined) return;
      stopping = false;
      running = loop();
    },
    kick(count = 1) {
      kicked += count;
      firstKickAt ??= Date.now();
      // A full call's worth: no reason to wait for the timer.
      if (kicked >= 100) wake?.();
    },
    async drained({ timeoutMs = 10_000 } = {}) {
      const until = Date.now() + timeoutMs;
      hurry++;
      try {
        for (;;) {
          wake?.();
          const stats = await outbox.stats();
          if (active.size === 0 && stats.pending === 0) return;
          if (Date.now() > until) throw new Error(`the outbox did not drain within ${timeoutMs} ms (${stats.pending} pending)`);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      } finally {
        hurry = Math.max(0, hurry - 1); // the loop may have reset it already: never below 0, or the next drained() could not hurry
      }
    },
    async stop() {
      stopping = true;
      wake?.();
      await running;
      // A graceful stop waits for every call in flight, and settles it.
      await Promise.allSettled([...active]);
      running = undefined;
      // Hand the lock on at once: a standby need not wait for it to run out.
      if (leading) await outbox.lead(owner, clock.now(), 1).catch(() => false);
      leading = false;
    },
  };
}
