/**
 * The contract between the relay's two halves. Ingest makes accepted items durable here and
 * answers the browser; the deliverer drains them to the platform in full, paced calls. Every
 * store (memory for tests, SQLite on one machine, Redis for many) implements {@link Outbox} and
 * {@link Pacer}; each method is one atomic step of the store (one transaction, one script).
 *
 * Stores are deliberately dumb: ordering, batching, the ambiguous-call policy and dead-letter
 * reasons are the deliverer's decisions (`deliver/deliverer.ts`).
 * @module
 */
import type { OutboxLimits } from '../core/outbox-limits.js';
import type { Erased, Person, Suppression } from './erase.js';
import type { TurnRequest } from './turns.js';

/**
 * Which platform call an entry goes in:
 * - `merge`: `person/merge` with `merge_strategy` 2 (a verified identify may change the person);
 * - `merge-create`: `person/merge` that may create a person but never changes an existing one
 *   (unverified identifies);
 * - `activity`: `activities/create`.
 */
export type EntryKind = 'merge' | 'merge-create' | 'activity';

/** One accepted item, ready to send: what ingest hands to {@link Outbox.accept}. */
export interface OutboxItem {
  /** the site's key (ids are unique per site) */
  site: string;
  /** the item id as the browser sent it (stores keep it compact: 16 bytes) */
  id: string;
  kind: EntryKind;
  /** the platform entry exactly as it goes in the call (fields, activity_id, attributes, location, created) */
  entry: Record<string, unknown>;
  /** the sending browser (the envelope's queue id, else the visitor key): identifies go before its tracks */
  browser: string;
  /** the visitor's rate-limit key, charged when the platform refuses the entry */
  visitor: string;
  /** ms since epoch when ingest accepted it */
  accepted: number;
}

/** An item leased to one deliverer. */
export interface Leased extends Omit<OutboxItem, 'entry'> {
  /**
   * The platform entry as JSON, as it goes in the call: serialised once when accepted, and not
   * parsed again on its way (state/item-text.ts), but for a merge's `fields` (deliver/batch.ts).
   */
  text: string;
  /** the outbox's own handle: unique, increasing in acceptance order */
  seq: number;
  /**
   * Sends started for this entry that were never settled before this lease. 0 = nothing was
   * ever sent (or every earlier send was known not to be applied); more = an earlier deliverer
   * may have sent it and died before it heard the answer, so the outcome is unknown.
   */
  attempts: number;
  /**
   * The entry's shape (ingest/shapes.ts `entryShape`), where the store worked it out at accept from
   * the entry it had as an object (memory): the shapes the platform took are learned from it
   * without parsing `text` again. Absent, they are learned from `text`.
   */
  shape?: string | undefined;
}

export interface Accepted {
  /** stored and remembered: the deliverer will send them */
  accepted: string[];
  /** remembered already (within the window): never stored twice */
  duplicate: string[];
  /** new, but the outbox is at one of its {@link OutboxLimits}: neither stored nor remembered (the browser keeps them and sends them again) */
  full: string[];
}

/** Dead letters expired or cut per accept at most: each accept's work stays bounded; more than a lease can add, so the list shrinks back. */
export const DEAD_SLICE = 1_000;

/** The end of one lease, in one atomic step. Only the owner's leases are touched. */
export interface Settlement {
  /** the platform took them: removed from the outbox (their ids stay remembered until the window ends) */
  delivered: readonly number[];
  /**
   * back to the outbox, ready again from `notBefore`: attempts back to 0 when known not to be
   * applied (429, refused before sending, …); kept when `tried` (the entry's sends are in doubt: an
   * ambiguous call sent again, or an entry leased with attempts that went back unsent)
   */
  released: readonly { seq: number; notBefore: number; tried?: boolean | undefined }[];
  /** refused by the platform for good, or held because the outcome is unknown: kept in the dead-letter list */
  dead: readonly { seq: number; reason: string; status?: number | undefined }[];
}

export interface DeadLetter extends OutboxItem {
  seq: number;
  reason: string;
  status?: number | undefined;
  /** ms since epoch */
  failed: number;
}

/** Read from counters the store keeps as entries come and go: the same cost whatever the backlog. */
export interface OutboxStats {
  /** waiting to be sent (ready or leased) */
  pending: number;
  /** in the dead-letter list */
  dead: number;
  /** ids remembered for dedupe */
  remembered: number;
  /** dead letters removed because their window ended, since the store was created */
  expired: number;
  /** dead letters removed because the list was over {@link OutboxLimits.dead}, since the store was created */
  cut: number;
}

export interface Outbox {
  /**
   * Stores every item whose id the site has not seen within the window, and remembers each id
   * until `now + windowMs`; ids remembered already are answered duplicate, new ids past `limits`
   * (default {@link NO_LIMITS}; the relay passes its settings) full (neither stored nor remembered). Also expires dead letters that failed `windowMs` ago or
   * more, and cuts the oldest past `limits.dead`, at most {@link DEAD_SLICE} of each. One atomic step.
   */
  accept(items: readonly OutboxItem[], now: number, windowMs: number, limits?: OutboxLimits): Promise<Accepted>;
  /**
   * Leases up to `max` ready entries (not dead, not leased by a live lease, `notBefore` passed) to
   * `owner` until `now + leaseMs`, fairly: one run of up to `RUN` (10) entries per site in turn,
   * each site's turn going to its visitors in turn (sites and visitors with the longest-waiting
   * entries first; a visitor a lease took a whole run from waits behind the others from then), and
   * each visitor's entries lowest `seq` first (state/fair.ts). A flood from one visitor or one site then takes one
   * share of a lease, never the whole; alone, it takes the whole. By readiness, with bounded work:
   * only visitors with an entry ready now are looked at (one whose entries were all released for
   * later, or wait behind an identify, costs nothing), so a lease reads a small multiple of `max`
   * whatever the backlog holds (state/sql-ready.ts). While other entries are ready, a lease takes
   * at most one call's worth of merges (state/fair.ts `MERGES_PER_LEASE`).
   * Resolves in `seq` order. Leasing counts nothing: an entry leased by a deliverer that died
   * before it sent it comes back with the `attempts` it had.
   *
   * Identify before track, whoever leads: an activity is not leased while its browser (site and
   * `browser`) has an earlier merge in the outbox (ready, released or leased by anyone; only
   * delivered or dead lets it go), and a merge not while its browser has an earlier one in the
   * outbox that this lease does not take too.
   */
  lease(owner: string, max: number, now: number, leaseMs: number): Promise<Leased[]>;
  /**
   * A call carrying these entries is about to go: counts a started send on each (`attempts` + 1)
   * that is still under `owner`'s live lease (leased to `owner`, lease not expired at `now`), in
   * one atomic step. Resolves to the seqs it marked, in the order given; the caller sends only
   * those (the others' leases ran out, and another deliverer may hold them now). Called right
   * before each platform call, so a deliverer that dies leaves `attempts > 0` only on the entries
   * of the calls it had in flight.
   */
  sending(owner: string, seqs: readonly number[], now: number): Promise<number[]>;
  /** Settles `owner`'s leases; resolves to how many of the named entries were not owner's (skipped). */
  settle(owner: string, settlement: Settlement, now: number): Promise<{ skipped: number }>;
  /**
   * Takes or renews the deliverer's lock for `owner` until `now + ttlMs`: one deliverer drains a
   * deployment at a time, so ordering and pacing need no cross-process coordination of leases.
   */
  lead(owner: string, now: number, ttlMs: number): Promise<boolean>;
  /** The dead-letter list, oldest first (read in pages of bounded size). */
  deadLetters(options?: { site?: string; limit?: number }): Promise<DeadLetter[]>;
  /** Moves dead letters back to ready (attempts 0); all of them when `seqs` is undefined. Resolves to how many. */
  retryDead(seqs: readonly number[] | undefined, now: number): Promise<number>;
  /** Deletes dead letters for good; all of them when `seqs` is undefined. Resolves to how many. */
  dropDead(seqs: readonly number[] | undefined): Promise<number>;
  stats(): Promise<OutboxStats>;
  /**
   * Drops `person`'s waiting entries and dead letters (of `site` only, when given), in one atomic
   * step: every entry whose `fields` name them (state/erase.ts `namesPerson`). An entry under a live
   * lease is left to its deliverer (a call may be carrying it) and counted `inFlight`; a lease
   * taken after this step cannot take what it dropped.
   */
  erase(person: Person, site: string | undefined, now: number): Promise<Erased>;
  /** Adds people to the suppression list until `until` (ms since epoch; a later `until` of a row already there wins), and forgets rows ended at `now`. */
  suppress(rows: readonly Suppression[], until: number, now: number): Promise<void>;
  /** The suppression list's rows still in force at `now` (it is short: one row per erasure). */
  suppressed(now: number): Promise<Suppression[]>;
}

/**
 * Platform calls per second for one API key, shared by every process or isolate of a
 * deployment. Proxy and deliver calls share one window: a proxy call takes the next free place
 * in it, and deliver calls leave only where they fit (state/pace.ts).
 */
export interface Pacer {
  /**
   * Takes one call: resolves to 0 when granted, else the ms to wait before asking again (nothing
   * taken). A `proxy` call may also be granted a slot `n` ms from now: it resolves to `-n`, and the
   * caller waits that long, then goes (state/pace.ts). `turns` (only to a pacer with
   * {@link Pacer.giveBack}): the merge turn the call asks for, granted with the slot, and the
   * turns of calls answered since (state/turns.ts).
   */
  take(now: number, priority: 'proxy' | 'deliver', turns?: TurnRequest): Promise<number>;
  /**
   * A deliver call will leave `inMs` from `now`: 0 when it fits then in the window the pacer shares
   * with proxy calls (and is counted there), else the ms from then until it would. Only where one
   * deliverer sends past the pacer's window (the Node stores): the proxy calls of every process
   * then take slots the deliverer's calls leave free, and no mix of the two puts more than the
   * rate in a window (state/pace.ts `paceLeave`; `again`: the last call counted so did not leave
   * then, and its count moves).
   */
  leave?(now: number, inMs: number, again?: boolean): Promise<number>;
  /**
   * The platform answered a call 429 at `now`, asking to wait (`try-in-seconds`): no call of this
   * key before `until`; the first 429 of a hold also widens the key's send margin (state/margin.ts).
   */
  hold(until: number, now: number): Promise<void>;
  /**
   * Only a pacer several deliverers share keeps merge turns per person (Workers' key pacer): gives
   * back the turns `ids` when no slot request is coming to carry them. One deliverer never has two
   * merge calls of one person in flight (deliver/scheduler.ts), so Node's pacers keep no turns.
   */
  giveBack?(ids: readonly string[], now: number): Promise<void>;
  /**
   * Optional fast path of a pacer that shares the outbox's transactions (the SQLite file): the
   * steps of one deliver call at its turn to leave in one atomic step ({@link CallStep}), where
   * each would otherwise be a transaction (and a sync) of its own. For `outbox` only when it is
   * this store's own outbox object: else undefined, and the caller asks each step apart.
   */
  stepsWith?(outbox: Outbox): CallStep | undefined;
}

/**
 * One deliver call's pacer steps and its `sending` mark, as one atomic step, each taken only once
 * the one before it was granted: its slot (`take`, {@link Pacer.take} 'deliver'), then its place
 * in the shared window `inMs` from `now` ({@link Pacer.leave}), then, when asked (the call leaves
 * once the step is done), the mark of its entries ({@link Outbox.sending}). What one of them refused is not
 * taken, nor anything after it; what was granted before it is kept, as if asked apart.
 */
export type CallStep = (ask: CallStepAsk) => Promise<CallStepAnswer>;

export interface CallStepAsk {
  now: number;
  /** take the call's slot first */
  take: boolean;
  /** the call leaves this long from `now` (its spacer's wait): counted in the shared window then */
  inMs: number;
  /** as {@link Pacer.leave}'s: the last count did not leave then, and moves */
  again: boolean;
  /** mark these entries of `owner`'s lease `sending` once counted (the call leaves once the step is done, `inMs` its usual time) */
  sending?: { owner: string; seqs: readonly number[] } | undefined;
}

export interface CallStepAnswer {
  /** whether the slot was taken in this step (asked and granted) */
  taken: boolean;
  /** 0 once counted; else the ms from `now` before asking again (the take's wait, or `inMs` and the window's) */
  wait: number;
  /** the seqs marked, as {@link Outbox.sending} answers: when asked and counted */
  marked?: number[];
}

/** One connection to a durable store (an SQLite file, a Redis client): its outbox and pacers. */
export interface OutboxStore {
  outbox: Outbox;
  /** A pacer of `rate` platform calls/s whose budget every process using this store shares; `catchUpMs` as in `pace()` (state/pace.ts) @default 0 */
  pacer(rate: number, catchUpMs?: number): Pacer;
  /** How a commit reaches the disk, read back from the connection (SQLite: `WAL, synchronous=NORMAL, WAL synced before each answer`) */
  durability?: string;
  /** The SQLite driver it was opened with (`node:sqlite` or `libsql`, sqlite-driver.ts) */
  driver?: string;
  /** Releases the connection. */
  close(): Promise<void>;
}
