/**
 * The relay's state on Workers: Durable Objects with SQLite storage, called over RPC. A site's
 * dedupe ids are spread over `RELAY_SHARDS` shard objects, so no object sees all of a site's
 * traffic. Each id goes to the shard of its own hash, whatever the envelope's `queue` says, so an
 * id sent under two queues meets one object: dedupe holds per site. A `/collect` costs one claim
 * and one settle per shard its items touch, in parallel (the Worker's own /collect now goes to the
 * outbox objects, outbox.ts; the delivery ledger of earlier versions' queue consumer is only swept
 * here until it is empty). The key's pacer lives in the same class. The address-lookup budget is a counter of its own object
 * per site, exact across the world.
 *
 * Durable Objects are strongly consistent and single-threaded, which dedupe needs; KV is eventually
 * consistent and must not be used.
 * @module
 */
import type { DurableObjectNamespace, DurableObjectState } from '@cloudflare/workers-types/index.ts';
import { DurableObject } from 'cloudflare:workers';
import type { LimitDecision } from '../core/limits.js';
import { KeyPacers, PACE_TABLES } from './pacer-slot.js';
import type { TurnRequest } from '../state/turns.js';
import { TURNS_TABLE } from './turn-store.js';
import { chargeBucket } from './buckets.js';
import { readShapes, storeShapes } from './shape-rows.js';
import { cappedAmount, type Claim, type DedupeScope, type RelayStore } from '../state/store.js';

/** What an old object answers (RelayState.remembered): until when each id is remembered (0: not), whether each was in doubt, and its horizon. */
export interface Remembered {
  texts: number[];
  blobs: number[];
  doubted: { texts: boolean[]; blobs: boolean[] };
  horizon: number;
}

/** The states of the previous release's queue ledger (`delivered`) that remember an id: delivered, dead-lettered. */
const DELIVERED = 1;
const DEAD = 2;
/** An old row in doubt: forwarded under a live lease, or a ledger row sent by the consumer and never answered. */
const DOUBTED_TEXT = 'SELECT 1 FROM ids WHERE id = ?1 AND lease_until > ?2 AND forwarded_until <= ?2';
const DOUBTED_BLOB = `SELECT 1 FROM delivered WHERE id = ?1 AND state NOT IN (${DELIVERED}, ${DEAD}) AND (attempts > 0 OR lease_until > ?2) AND max(expires, lease_until) > ?2`;

/** Expired rows deleted per claim: more than a claim adds, so the table shrinks back after a peak. */
const EXPIRY_SLICE = 200;
/** Expired rows deleted per alarm; a full slice calls the alarm back a second later for the rest. */
const SWEEP_SLICE = 10_000;
/** How long an expired row may outlive its expiry in an object that no claim visits (its alarm's period). */
const SWEEP_INTERVAL_MS = 3600_000;

/** Shards per site when RELAY_SHARDS is not set (see docs/scaling.md for the arithmetic). */
export const DEFAULT_SHARDS = 16;

/**
 * The Durable Object class (export it from the Worker; bind it as `RELAY_STATE` with an SQLite
 * migration). One class for both kinds of object: a site's shards hold ids, its counters object
 * holds the address-lookup budget.
 *
 * Storage stays bounded by the dedupe window: each row carries when it expires (indexed), every
 * claim deletes a slice of expired rows, and an alarm sweeps objects that no claim visits.
 */
export class RelayState extends DurableObject<unknown> {
  /** calls served since this instance started (not persisted): lets a test or an operator see the spread */
  private calls = 0;
  /** when the sweep alarm is set for (null: none; undefined: not read yet) */
  private sweepAt: number | null | undefined;
  /** this object's clock, which its pacers grant on (a test sets a virtual one from inside the object) */
  clock: () => number = () => Date.now();
  /** the pacers served here: slots, merge turns, the spread of their callers (pacer-slot.ts) */
  private readonly pacers = new KeyPacers(this.ctx.storage, () => this.clock());

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    // `items` and `buckets` were the single per-site object's tables before the shards: their ids
    // are not consulted any more (claims go to the shards), and rate limits left Durable Objects.
    this.ctx.storage.sql.exec(`DROP TABLE IF EXISTS items; DROP TABLE IF EXISTS buckets;
      CREATE TABLE IF NOT EXISTS ids (id TEXT PRIMARY KEY, forwarded_until INTEGER NOT NULL DEFAULT 0, lease_until INTEGER NOT NULL DEFAULT 0, expires INTEGER NOT NULL);
      CREATE INDEX IF NOT EXISTS ids_expires ON ids (expires);
      CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS delivered (id BLOB PRIMARY KEY, state INTEGER NOT NULL, owner TEXT NOT NULL DEFAULT '', lease_until INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, expires INTEGER NOT NULL) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS delivered_expires ON delivered (expires);
      ${PACE_TABLES} ${TURNS_TABLE}`);
  }

  /**
   * One platform call from the pacer `name` (state/pace.ts), granted on this object's clock: 0 when
   * granted, else the ms to wait from now. `now`: the caller's clock (measured, not paced by).
   * `turns`: the merge turn granted with the slot, and turns given back (state/turns.ts). With
   * `waitUpToMs`, the call waits here for both, up to that long (pacer-slot.ts).
   */
  take(name: string, now: number, priority: 'proxy' | 'deliver', intervalMs: number, turns?: TurnRequest, waitUpToMs = 0): Promise<number> {
    this.calls++;
    return this.pacers.take(name, now, priority, intervalMs, turns, waitUpToMs);
  }

  /** Gives back merge turns of pacer `name` whose calls are answered (state/turns.ts); `_now`, the caller's clock, is not used. */
  giveBack(name: string, ids: string[], _now?: number): void {
    this.calls++;
    this.pacers.giveBack(name, ids);
  }

  /** No call of pacer `name` before `until` (the platform's `try-in-seconds`), on the caller's clock at `now`. */
  hold(name: string, until: number, now?: number): void {
    this.calls++;
    this.pacers.hold(name, until, now);
  }

  /** Leases `ids` for `leaseMs` unless forwarded or leased already. */
  async claim(ids: string[], now: number, leaseMs: number): Promise<Claim> {
    this.calls++;
    const sql = this.ctx.storage.sql;
    const claim = this.ctx.storage.transactionSync(() => {
      // Expired rows go a few at a time (oldest first, by the index), so no request pays for a big sweep.
      sql.exec('DELETE FROM ids WHERE rowid IN (SELECT rowid FROM ids WHERE expires < ? ORDER BY expires LIMIT ?)', now, EXPIRY_SLICE);
      const claim: Claim = { fresh: [], duplicate: [], busy: [] };
      for (const id of ids) {
        const row = sql.exec<{ forwarded_until: number; lease_until: number }>('SELECT forwarded_until, lease_until FROM ids WHERE id = ?', id).toArray()[0];
        if (row && row.forwarded_until > now) claim.duplicate.push(id);
        else if (row && row.lease_until > now) claim.busy.push(id);
        else {
          sql.exec(
            'INSERT INTO ids (id, lease_until, expires) VALUES (?1, ?2, ?2) ON CONFLICT(id) DO UPDATE SET forwarded_until = 0, lease_until = ?2, expires = ?2',
            id,
            now + leaseMs,
          );
          claim.fresh.push(id);
        }
      }
      return claim;
    });
    if (claim.fresh.length > 0) await this.sweepBy(now + leaseMs);
    return claim;
  }

  /** Marks `forwarded` until `until` and drops the leases of `released`. */
  async settle(forwarded: string[], until: number, released: string[]): Promise<void> {
    this.calls++;
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      for (const id of forwarded) {
        sql.exec(
          'INSERT INTO ids (id, forwarded_until, expires) VALUES (?1, ?2, ?2) ON CONFLICT(id) DO UPDATE SET forwarded_until = ?2, lease_until = 0, expires = ?2',
          id,
          until,
        );
      }
      // A released id is free at once: nothing to remember (a row forwarded before keeps its mark).
      for (const id of released) sql.exec('UPDATE ids SET lease_until = 0, expires = forwarded_until WHERE id = ?', id);
    });
    if (forwarded.length > 0) await this.sweepBy(until);
  }

  /**
   * What the previous release remembers in this object (previous.ts), for an upgraded Worker:
   * until when each of `ids` (its no-queue shards' ids, as sent) was forwarded and each of `blobs`
   * (its queue ledger's 16-byte ids) delivered or dead-lettered (0: not remembered), which were in
   * doubt (under a live lease, or tried by the queue consumer: held as ambiguous), and the last
   * moment anything here expires (`horizon`, 0 when nothing is left: read from the indexes).
   */
  remembered(ids: string[], blobs: ArrayBuffer[], now: number): Remembered {
    this.calls++;
    const sql = this.ctx.storage.sql;
    const one = (statement: string, ...params: unknown[]) =>
      Number(
        sql
          .exec(statement, ...params)
          .raw()
          .next().value?.[0] ?? 0,
      );
    return {
      texts: ids.map((id) => one('SELECT forwarded_until FROM ids WHERE id = ?1 AND forwarded_until > ?2', id, now)),
      blobs: blobs.map((id) => one(`SELECT expires FROM delivered WHERE id = ?1 AND state IN (${DELIVERED}, ${DEAD}) AND expires > ?2`, id, now)),
      // Under a live lease (being forwarded, or a consumer's call) or tried by a consumer: it may have been applied.
      doubted: { texts: ids.map((id) => one(DOUBTED_TEXT, id, now) === 1), blobs: blobs.map((id) => one(DOUBTED_BLOB, id, now) === 1) },
      horizon: one('SELECT max(coalesce((SELECT max(expires) FROM ids), 0), coalesce((SELECT max(expires) FROM delivered), 0))'),
    };
  }

  /** Moves refusal bucket `key` by `charge` (0: looks) in one step (buckets.ts, for refusals.ts). */
  bucket(key: string, perSecond: number, burst: number, now: number, charge?: number): LimitDecision {
    this.calls++;
    return chargeBucket(this.ctx.storage, key, { perSecond, burst }, now, charge);
  }

  /** The site's shapes the platform took are known until `until` (shape-rows.ts, for shapes.ts). */
  learnShapes(site: string, shapes: string[], until: number, now: number): void {
    this.calls++;
    storeShapes(this.ctx.storage, site, shapes, until, now);
  }

  /** Which of the site's `shapes` are known at `now`, each with its end (shape-rows.ts, for shapes.ts). */
  knownShapes(site: string, shapes: string[], now: number): [string, number][] {
    this.calls++;
    return readShapes(this.ctx.storage, site, shapes, now);
  }

  /** Adds up to `amount` to counter `name` without passing `limit` (`null`: no limit). */
  add(name: string, amount: number, limit: number | null): number {
    this.calls++;
    const sql = this.ctx.storage.sql;
    return this.ctx.storage.transactionSync(() => {
      const value = sql.exec<{ value: number }>('SELECT value FROM counters WHERE name = ?', name).toArray()[0]?.value ?? 0;
      const added = cappedAmount(value, amount, limit ?? Number.POSITIVE_INFINITY);
      if (added > 0) sql.exec('INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value', name, value + added);
      return added;
    });
  }

  /** Deletes expired ids; comes back while ids remain, so an object no claim visits any more empties itself. */
  override async alarm(): Promise<void> {
    this.sweepAt = null;
    const now = Date.now();
    const sql = this.ctx.storage.sql;
    sql.exec('DELETE FROM ids WHERE rowid IN (SELECT rowid FROM ids WHERE expires < ? ORDER BY expires LIMIT ?)', now, SWEEP_SLICE);
    sql.exec('DELETE FROM delivered WHERE id IN (SELECT id FROM delivered WHERE expires < ? ORDER BY expires LIMIT ?)', now, SWEEP_SLICE);
    const next =
      sql
        .exec<{ next: number | null }>('SELECT min(e) AS next FROM (SELECT min(expires) AS e FROM ids UNION ALL SELECT min(expires) FROM delivered)')
        .toArray()[0]?.next ?? null;
    if (next === null) return;
    // More expired than one slice: the rest a second later; else when the next id expires.
    await (next < now ? this.sweepBy(now + 1000, true) : this.sweepBy(next));
  }

  /**
   * Makes sure a sweep runs after `expiry`, at most one alarm per {@link SWEEP_INTERVAL_MS}: an
   * alarm set already for earlier stays (it sets the next one when it runs).
   */
  private async sweepBy(expiry: number, soon = false): Promise<void> {
    if (this.sweepAt === undefined) this.sweepAt = await this.ctx.storage.getAlarm();
    if (this.sweepAt !== null) return;
    const at = soon ? expiry : Math.max(expiry, Date.now() + SWEEP_INTERVAL_MS);
    await this.ctx.storage.setAlarm(at);
    this.sweepAt = at;
  }

  /** Calls served here, ids held, when the sweep is due, and pacer waits not waited out (pacer-slot.ts). Not counted as a call. */
  async usage(): Promise<{ calls: number; rows: number; delivered: number; sweepAt: number | null; outwaited: number }> {
    const count = (table: string) => this.ctx.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).toArray()[0]?.n ?? 0;
    const sweepAt = await this.ctx.storage.getAlarm();
    return { calls: this.calls, rows: count('ids'), delivered: count('delivered'), sweepAt, outwaited: this.pacers.outwaited };
  }
}

/** FNV-1a: a fast, stable 32-bit hash, so the same queue or id always meets the same shard. */
export function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The object name of a site's shard `n`, and of its counters. */
export const shardName = (site: string, shard: number): string => `${site}#${shard}`;
/**
 * The counters object of a site has the name the site's single object had before the shards: the
 * address-lookup budget already spent this month stays counted across the upgrade.
 */
export const countersName = (site: string): string => site;

/**
 * Which shard each id lives in: its own, by a hash of the id, whatever the envelope's `queue` says,
 * so the same id sent under two queues (two tabs, a beacon, a server) meets the same shard.
 */
function byShard(_scope: DedupeScope, ids: readonly string[], shards: number): Map<number, string[]> {
  const groups = new Map<number, string[]>();
  for (const id of ids) {
    const shard = hash(id) % shards;
    groups.set(shard, [...(groups.get(shard) ?? []), id]);
  }
  return groups;
}

/** A {@link RelayStore} over the sharded {@link RelayState} objects. */
export function createDurableStore(namespace: DurableObjectNamespace<RelayState>, shards = DEFAULT_SHARDS): RelayStore {
  const object = (name: string) => namespace.get(namespace.idFromName(name));
  return {
    async claim(scope, ids, now, leaseMs) {
      const claims = await Promise.all(
        [...byShard(scope, ids, shards)].map(([shard, part]) => object(shardName(scope.site, shard)).claim(part, now, leaseMs) as Promise<Claim>),
      );
      return { fresh: claims.flatMap((c) => c.fresh), duplicate: claims.flatMap((c) => c.duplicate), busy: claims.flatMap((c) => c.busy) };
    },
    async settle(scope, { forwarded, until, released }) {
      const marked = byShard(scope, forwarded, shards);
      const freed = byShard(scope, released, shards);
      await Promise.all(
        [...new Set([...marked.keys(), ...freed.keys()])].map((shard) =>
          object(shardName(scope.site, shard)).settle(marked.get(shard) ?? [], until, freed.get(shard) ?? []),
        ),
      );
    },
    // Infinity does not survive RPC as a limit: null stands for "no limit".
    add: async (site, name, amount, limit) => (await object(countersName(site)).add(name, amount, Number.isFinite(limit) ? limit : null)) as number,
    // Each shard is its own object: there is no one object to ask, and the binding itself cannot be down.
    ping: async () => {},
    stats: async () => undefined,
    close: async () => {},
  };
}
