/**
 * The Workers outbox: a Durable Object with SQLite storage that runs the Node SQLite outbox's own
 * statements (state/sql-outbox.ts) and delivers its entries from its alarm, a round of the engine
 * the Node deliverer runs (deliver/round.ts), taking call slots from the key's pacer object. `/collect`
 * answers `accepted` once the items are in one of these objects (outbox.ts spreads them over
 * `RELAY_SHARDS`); the alarm then sends full, paced calls, releases what the platform did not take
 * for later (an outage of any length: nothing expires but remembered ids), and holds what may have
 * been applied without an answer as dead letters.
 *
 * The same class is the id router (objects `route#n`): which outbox object an item id went to.
 * @module
 */
import type { DurableObjectState } from '@cloudflare/workers-types/index.ts';
import { DurableObject } from 'cloudflare:workers';
import { createHolds } from '../deliver/holds.js';
import { deliverRound } from '../deliver/round.js';
import { createSpacer, type Spacer } from '../deliver/spacer.js';
import type { Erased, Person, Suppression } from '../state/erase.js';
import type { Accepted, DeadLetter, Leased, OutboxItem, OutboxStats, OutboxStore, Settlement } from '../state/outbox.js';
import { scrub } from '../core/logging.js';
import type { OutboxLimits } from '../core/outbox-limits.js';
import { createSqlOutbox } from '../state/sql-outbox.js';
import { type DeliveryEnv, platformRate, shardEngine, workerConfig } from './delivery.js';
import { doubtedHome, PREVIOUS_HOME, rememberedBefore } from './previous.js';
import { durableSqlPort } from './sql-port.js';

/** How long one alarm's round starts calls for; a backlog continues in the next alarm at once. */
const ALARM_TURN_MS = 30_000;
/** After a round that left entries waiting (released for later: an outage, a 429), the next alarm. */
const AGAIN_MS = 1_000;
/** The alarm set while a round runs: should its isolate die in it, the object wakes this long after its start. */
const SAFETY_MS = ALARM_TURN_MS + 60_000;
/** Expired routes deleted per call: more than a call adds. */
const ROUTE_EXPIRY_SLICE = 500;

const ROUTES = `CREATE TABLE IF NOT EXISTS outbox_routes (key TEXT PRIMARY KEY, home INTEGER NOT NULL, until INTEGER NOT NULL) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS outbox_routes_until ON outbox_routes (until);`;
const ROUTE = `INSERT INTO outbox_routes (key, home, until) SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?1) WHERE true
  ON CONFLICT (key) DO UPDATE SET home = iif(until <= ?2, excluded.home, home), until = iif(until <= ?2, excluded.until, until) RETURNING key, home`;
const LIVE = 'SELECT key FROM outbox_routes WHERE key IN (SELECT value FROM json_each(?1)) AND until > ?2';

export class RelayOutbox extends DurableObject<DeliveryEnv> {
  private readonly port: ReturnType<typeof durableSqlPort>;
  private store!: Omit<OutboxStore, 'close'>;
  /** an alarm's round is running in this instance */
  private delivering = false;
  /** items accepted since this instance started: a round waiting to fill sees more came */
  private acceptedCount = 0;
  /** an alarm is set (false: not set or not known) */
  private alarmSet = false;
  /** calls served since this instance started (not persisted): shows the spread over objects */
  private calls = 0;
  /** alarms run since this instance started (each is a Durable Object request too) */
  private alarms = 0;
  /** `stats` calls served since this instance started: what the Worker's idle room reads (ingest/idle-room.ts) */
  private statsCalls = 0;
  /** kept across rounds, as the Node deliverer keeps them: calls counted by when they left, and partial calls held back to fill (at most 2 s) */
  private spacer: Spacer | undefined;
  private readonly holds = createHolds();

  constructor(ctx: DurableObjectState, env: DeliveryEnv) {
    super(ctx, env);
    this.port = durableSqlPort(ctx.storage);
    void ctx.blockConcurrencyWhile(async () => {
      this.store = await createSqlOutbox(this.port);
    });
  }

  /** Outbox.accept, then makes sure this object's alarm delivers what it accepted: what the Worker calls. */
  async acceptToDeliver(items: OutboxItem[], now: number, windowMs: number, limits?: OutboxLimits, doubted: string[] = []): Promise<Accepted> {
    const after = Number(this.port.query('SELECT coalesce(max(seq), 0) FROM outbox')[0]?.[0] ?? 0);
    const accepted = await this.accept(items, now, windowMs, limits);
    // What the previous release may have sent (previous.ts) is stored as sent once: held, not delivered again.
    const held = doubted.filter((id) => accepted.accepted.includes(id));
    if (held.length > 0)
      this.port.run("UPDATE outbox SET attempts = 1 WHERE seq > ?1 AND item ->> '$.id' IN (SELECT value FROM json_each(?2))", after, JSON.stringify(held));
    this.acceptedCount += accepted.accepted.length;
    // The first item of a quiet object waits RELAY_DELIVERY_WAIT_MS for others to fill its call.
    if (accepted.accepted.length > 0 && !this.delivering) await this.wakeAt(Date.now() + workerConfig(this.env).deliveryWaitMs);
    return accepted;
  }

  /** Delivers what is ready (dead letters moved back, say) from the next alarm. */
  async wake(): Promise<void> {
    if (!this.delivering) await this.wakeAt(Date.now());
  }

  // The Outbox itself, as on Node: the conformance suite's, and the facade's (outbox.ts).
  accept(items: OutboxItem[], now: number, windowMs: number, limits?: OutboxLimits): Promise<Accepted> {
    this.calls++;
    return this.store.outbox.accept(items, now, windowMs, limits);
  }

  /**
   * The router's step: each `[key, home]` keeps the home it was first given within the window
   * (until `until`); resolves to the home of each key, in the order given. `previous` (the site and
   * id of each key, and RELAY_SHARDS) lets a key met for the first time be checked against the
   * previous release's memory (previous.ts): one it remembers is routed to {@link PREVIOUS_HOME}
   * for as long as it remembers it, one it had in doubt to its home marked ({@link doubtedHome}).
   */
  async route(pairs: [string, number][], now: number, until: number, previous?: { items: [string, string][]; shards: number }): Promise<number[]> {
    this.calls++;
    this.port.exec(ROUTES);
    const rows = pairs.map(([key, home]): [string, number, number] => [key, home, until]);
    if (previous) {
      const live = new Set(this.port.query(LIVE, JSON.stringify(pairs.map(([key]) => key)), now).map(([key]) => key as string));
      const fresh = [...pairs.keys()].filter((i) => !live.has(pairs[i]![0]));
      const before = await rememberedBefore(
        this.env.RELAY_STATE,
        this.port,
        fresh.map((i) => previous.items[i]!),
        previous.shards,
        now,
      );
      for (const [j, i] of fresh.entries()) {
        if (before.until[j]! > now) rows[i] = [pairs[i]![0], PREVIOUS_HOME, before.until[j]!];
        else if (before.doubted[j]) rows[i] = [pairs[i]![0], doubtedHome(pairs[i]![1]), until];
      }
    }
    return this.ctx.storage.transactionSync(() => {
      this.port.run('DELETE FROM outbox_routes WHERE key IN (SELECT key FROM outbox_routes WHERE until <= ?1 LIMIT ?2)', now, ROUTE_EXPIRY_SLICE);
      const homes = new Map(this.port.query(ROUTE, JSON.stringify(rows), now).map(([key, home]) => [key as string, Number(home)]));
      return pairs.map(([key]) => homes.get(key)!);
    });
  }

  lease(owner: string, max: number, now: number, leaseMs: number): Promise<Leased[]> {
    return this.store.outbox.lease(owner, max, now, leaseMs);
  }
  sending(owner: string, seqs: number[], now: number): Promise<number[]> {
    return this.store.outbox.sending(owner, seqs, now);
  }
  settle(owner: string, settlement: Settlement, now: number): Promise<{ skipped: number }> {
    return this.store.outbox.settle(owner, settlement, now);
  }
  lead(owner: string, now: number, ttlMs: number): Promise<boolean> {
    return this.store.outbox.lead(owner, now, ttlMs);
  }
  deadLetters(options: { site?: string; limit?: number } = {}): Promise<DeadLetter[]> {
    return this.store.outbox.deadLetters(options);
  }
  retryDead(seqs: number[] | undefined, now: number): Promise<number> {
    return this.store.outbox.retryDead(seqs, now);
  }
  dropDead(seqs: number[] | undefined): Promise<number> {
    return this.store.outbox.dropDead(seqs);
  }
  stats(): Promise<OutboxStats> {
    this.statsCalls++;
    return this.store.outbox.stats();
  }
  erase(person: Person, site: string | undefined, now: number): Promise<Erased> {
    return this.store.outbox.erase(person, site, now);
  }
  suppress(rows: Suppression[], until: number, now: number): Promise<void> {
    this.calls++;
    return this.store.outbox.suppress(rows, until, now);
  }
  suppressed(now: number): Promise<Suppression[]> {
    this.calls++;
    return this.store.outbox.suppressed(now);
  }
  /** This object's own SQL pacer (the conformance suite's; the Worker paces with the key's pacer object). */
  take(rate: number, now: number, priority: 'proxy' | 'deliver', catchUpMs = 0): Promise<number> {
    return this.store.pacer(rate, catchUpMs).take(now, priority);
  }
  hold(rate: number, until: number, now: number): Promise<void> {
    return this.store.pacer(rate).hold(until, now);
  }
  leave(rate: number, now: number, inMs: number, again = false): Promise<number> {
    return this.store.pacer(rate).leave!(now, inMs, again);
  }

  /**
   * Calls (accepts, routes, and the suppression list's reads and writes, which the deployment's
   * `suppressions` object serves), `stats` calls and alarms served by this instance, the rows its
   * SQL has read, and whether it is delivering now. Not counted as a call.
   */
  usage(): { calls: number; stats: number; alarms: number; delivering: boolean; rowsRead: number } {
    return { calls: this.calls, stats: this.statsCalls, alarms: this.alarms, delivering: this.delivering, rowsRead: this.port.rowsRead() };
  }

  /**
   * One round of the delivery engine over this object's entries: full calls of what is ready,
   * waiting up to `RELAY_DELIVERY_WAIT_MS` after a partial lease for more, until nothing is ready
   * or the turn is over. Entries still waiting (released for later by an outage or a 429, or a
   * backlog) set the next alarm, so delivery goes on for as long as the platform is away, and no
   * retry count ever gives up on an item. A failure never escapes the alarm: the next one is set
   * before the round starts (for the end of the turn, should this isolate die in it).
   */
  override async alarm(): Promise<void> {
    this.alarms++;
    this.alarmSet = false;
    // The safety alarm of a round still marked running (stuck on a call): armed again, so this
    // object wakes once that round ends or its isolate dies, whatever it waits for.
    await this.ctx.storage.setAlarm(Date.now() + SAFETY_MS);
    this.alarmSet = true;
    if (this.delivering) return;
    this.delivering = true;
    let more = false;
    try {
      const config = workerConfig(this.env);
      this.spacer ??= createSpacer(platformRate(this.env));
      const spacer = this.spacer;
      const round = await deliverRound({
        ...shardEngine(this.env, this.store.outbox, `outbox-${this.ctx.id.toString().slice(0, 12)}`),
        spacer,
        holds: this.holds,
        deadline: Date.now() + ALARM_TURN_MS,
        refill: async () => {
          const before = this.acceptedCount;
          await new Promise((resolve) => setTimeout(resolve, config.deliveryWaitMs));
          return this.acceptedCount > before;
        },
      });
      more = round.more;
    } catch (error) {
      console.log(JSON.stringify({ level: 'error', ts: new Date().toISOString(), kind: 'deliver', error: 'delivery_failed', cause: scrub(String(error)) }));
    } finally {
      this.delivering = false;
    }
    await this.ctx.storage.deleteAlarm();
    this.alarmSet = false;
    if (more || (await this.store.outbox.stats()).pending > 0) await this.wakeAt(Date.now() + (more ? 0 : AGAIN_MS));
  }

  /** Sets the alarm for `at` unless one is set already (for no later). */
  private async wakeAt(at: number): Promise<void> {
    if (this.alarmSet) return;
    const set = await this.ctx.storage.getAlarm();
    if (set === null || set > at) await this.ctx.storage.setAlarm(at);
    this.alarmSet = true;
  }
}
