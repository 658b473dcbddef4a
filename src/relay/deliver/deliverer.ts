/**
 * The Node deliverer: drains the outbox to the platform in full, paced calls, by running the
 * engine's rounds (round.ts) back to back while it leads. One deliverer drains a deployment at a
 * time (lead.ts): the lock is renewed while it runs and covers each of its calls, so a standby
 * takes over only once the leader is gone and none of its calls can still land. Between rounds it
 * waits to fill a call (fill.ts).
 *
 * What an answer proves (verdict.ts):
 * - delivered → settled (the id stays remembered for the window);
 * - refused per entry (4xx details, an `invalid` entry) → dead letter with the reason;
 * - refused as a whole without details → cut into parts until the bad entries are alone (halving.ts);
 * - not applied (429, 503, unreachable) → released for later; a 429 holds the whole deployment;
 * - ambiguous (timeout, lost connection, 500/502/504): merges are sent again; activities are held
 *   in the dead-letter list, reason `ambiguous` (or released with `RELAY_AMBIGUOUS=resend`).
 * @module
 */
import type { EngineOptions } from './engine.js';
import { createFiller } from './fill.js';
import { createLead } from './lead.js';
import { describe } from './report.js';
import { deliverRound } from './round.js';
import { createSpacer } from './spacer.js';
import { createHolds } from './holds.js';
import { DEFAULT_PLATFORM_RATE } from '../state/pace.js';

export interface DelivererOptions extends Omit<EngineOptions, 'owner'> {
  /** how long a partial call waits for more entries (ms) */
  waitMs: number;
  /** this process's name in the lead lock; its leases are named after it @default a random one */
  owner?: string;
  /** the lead lock's lifetime; a standby takes over this long after an idle leader died @default 5 000 ms */
  leadTtlMs?: number;
}

export interface Deliverer {
  /** this deliverer's name in the outbox */
  readonly owner: string;
  start(): void;
  /** Ingest accepted `count` items: a deliverer waiting to fill a call looks again. */
  kick(count?: number): void;
  /** Resolves once nothing is pending in the outbox and no call is in flight (tests, a graceful stop's report). */
  drained(options?: { timeoutMs?: number }): Promise<void>;
  /** Finishes the calls in flight, settles, releases its other leases and the lead lock. */
  stop(): Promise<void>;
}

export function createDeliverer(options: DelivererOptions): Deliverer {
  const { outbox, clock } = options;
  // The process id (where there is one) tells an operator which process leads.
  const pid = (globalThis as { process?: { pid?: number } }).process?.pid;
  const owner = options.owner ?? `deliverer-${pid ?? 0}-${crypto.randomUUID().slice(0, 8)}`;
  const leadTtlMs = options.leadTtlMs ?? 5_000;
  const log = (line: Record<string, unknown>) =>
    options.logger?.({ ts: new Date(clock.now()).toISOString(), kind: 'deliver', method: 'DELIVER', path: '', status: 0, ms: 0, ...line });
  let stopping = false;
  let running: Promise<void> | undefined;
  let inRound = false;
  /** rounds begun so far: drained() trusts a count of pending entries only when none began while it was read */
  let rounds = 0;
  const filler = createFiller(options.waitMs, () => stopping);
  const lead = createLead({ outbox, owner, clock, ttlMs: leadTtlMs, log });
  const spacer = createSpacer(options.rate ?? DEFAULT_PLATFORM_RATE);
  const holds = createHolds();

  async function loop(): Promise<void> {
    while (!stopping) {
      if (!(await lead.keep())) {
        await filler.nap(leadTtlMs / 3);
        continue;
      }
      await filler.waitToFill();
      if (stopping) break;
      filler.reset();
      inRound = true;
      rounds++;
      let leased = 0;
      try {
        const round = await deliverRound({
          ...options,
          owner,
          lead,
          spacer,
          holds,
          deadline: Number.POSITIVE_INFINITY,
          stopped: () => stopping,
          nap: filler.nap,
          refill: async () => {
            await filler.waitToFill();
            filler.reset();
            return !stopping;
          },
        });
        leased = round.entries;
      } catch (error) {
        log({ level: 'error', error: 'delivery_failed', cause: describe(error) });
        await filler.nap(1_000);
      } finally {
        inRound = false;
      }
      // Nothing there: wait for the next kick or poll.
      if (leased === 0) await filler.napForItems(options.waitMs > 0 ? options.waitMs : 50);
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
      filler.kick(count);
    },
    async drained({ timeoutMs = 10_000 } = {}) {
      const until = Date.now() + timeoutMs;
      filler.hurry(1);
      try {
        for (;;) {
          // Read while no round runs, and none began meanwhile: woken only after the read, else a
          // store that answers in a round trip (Redis) would see a fresh round every time.
          const idle = !inRound;
          const begun = rounds;
          const stats = await outbox.stats();
          if (idle && !inRound && rounds === begun && stats.pending === 0) return;
          if (Date.now() > until) throw new Error(`the outbox did not drain within ${timeoutMs} ms (${stats.pending} pending)`);
          filler.wake();
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      } finally {
        filler.hurry(-1);
      }
    },
    async stop() {
      stopping = true;
      filler.wake();
      // A graceful stop waits for every call in flight, and settles it.
      await running;
      running = undefined;
      // Hand the lock on at once: a standby need not wait for it to run out.
      await lead.release();
    },
  };
}
