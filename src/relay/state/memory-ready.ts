/**
 * Where each entry of the in-process outbox (memory-outbox.ts) waits, as the SQL outbox keeps it
 * (sql-ready.ts): ready (by lane, in seq order), waiting until a time (leased, or released for
 * later: a heap by time that a lease takes what has come due from), or held behind an earlier merge
 * of its browser. Lanes and sites with something ready are kept in the order they began waiting
 * (the longest-waiting first), so a lease reads what it takes.
 * @module
 */
import { type Lane, MERGES_PER_LEASE, takeFairMergesBounded } from './fair.js';
import { Seqs, Timeline } from './memory-lists.js';
import type { Leased, OutboxItem } from './outbox.js';

/** An item as the in-process outbox keeps it: its entry as JSON, serialised once when accepted (as a lease hands it on). */
export type StoredItem = Omit<Leased, 'seq' | 'attempts'>;

/**
 * The item as kept: a snapshot of its entry as JSON, which leases hand on as it is (no copy of the
 * entry's objects per accept and per lease), and its shape, worked out while the entry is an object:
 * the deliverer learns what the platform took from it (ingest/shapes.ts `learnLeased`) without
 * parsing the text again (`shape`: state/entry-shape.ts `entryShapes`).
 */
export const stored = (item: OutboxItem, shape: string): StoredItem => ({
  site: item.site,
  id: item.id,
  kind: item.kind,
  browser: item.browser,
  visitor: item.visitor,
  accepted: item.accepted,
  text: JSON.stringify(item.entry),
  shape,
});
/** The item with its entry parsed again (dead letters, an erasure's look). */
export const parsed = ({ text, shape: _shape, ...item }: StoredItem): OutboxItem => ({ ...item, entry: JSON.parse(text) as Record<string, unknown> });

export interface Entry {
  seq: number;
  item: StoredItem;
  attempts: number;
  /** who leased it last, while leased */
  owner: string | undefined;
  /** ready from this time: the end of the live lease, or the `notBefore` of a release */
  availableAt: number;
  /** where it waits; undefined once it left the outbox */
  place: 'ready' | 'wait' | 'held' | undefined;
  /** its site's and its visitor's numbers in the order they began waiting (the outbox's), the same while it is in the outbox */
  site: number;
  lane: number;
}

/** A lane with entries ready: its seqs, its number (`since`), where it is in its site's order (`key`), and its site. */
interface ReadyLane {
  since: number;
  key: number;
  /** the lease under way took an activity from it: its place after the lease (else -1) */
  took: number;
  seqs: Seqs;
  site: ReadySite;
}
/**
 * A site with lanes that have entries ready, by the lanes' keys (`order`; `lanes` by their numbers, `moved` by the keys
 * that are not their numbers: lanes a lease moved behind, numbered as new lanes are, so no key is another lane's number).
 */
interface ReadySite {
  since: number;
  order: Seqs;
  lanes: Map<number, ReadyLane>;
  moved: Map<number, ReadyLane>;
}

/** A lane's place in its site's order: its number at first, then a later one each time a lease takes from it. */
export interface LaneTurn {
  turn: number;
}

/**
 * The places of the entries waiting: `entries` and `merges` are the outbox's (seq → entry; browser → its merges' seqs);
 * `turnOf` the outbox's record of an entry's lane, `next` its next number in the order lanes began waiting.
 */
export function createMemoryReady(
  entries: ReadonlyMap<number, Entry>,
  merges: ReadonlyMap<string, ReadonlySet<number>>,
  turnOf: (entry: Entry) => LaneTurn,
  next: () => number,
) {
  const sites = new Map<number, ReadySite>();
  const order = new Seqs();
  const timeline = new Timeline();
  const held = new Map<string, Map<number, Entry>>();
  let looked = 0;
  const browserOf = (item: Omit<OutboxItem, 'entry'>) => `${item.site}\u0000${item.browser}`;
  /** Whether an earlier merge of its browser is in the outbox, other than those `taken` in this lease. */
  const behindMerge = (entry: Entry, taken?: ReadonlySet<number>) => {
    // No merge in the outbox (tracks alone): no browser's key is made for each entry placed.
    if (merges.size === 0) return false;
    // Iterates a browser's set alone (not `?? []`: a set or an array at one site deoptimised it).
    const mine = merges.get(browserOf(entry.item));
    if (mine === undefined) return false;
    for (const seq of mine) if (seq < entry.seq && (entry.item.kind === 'activity' || taken?.has(seq) !== true)) return true;
    return false;
  };
  const toReady = (entry: Entry) => {
    let site = sites.get(entry.site);
    if (site === undefined) {
      site = { since: entry.site, order: new Seqs(), lanes: new Map(), moved: new Map() };
      sites.set(entry.site, site);
      order.add(entry.site);
    }
    let lane = site.lanes.get(entry.lane);
    if (lane === undefined) {
      lane = { since: entry.lane, key: turnOf(entry).turn, took: -1, seqs: new Seqs(), site };
      site.lanes.set(entry.lane, lane);
      if (lane.key !== lane.since) site.moved.set(lane.key, lane);
      site.order.add(lane.key);
    }
    lane.seqs.add(entry.seq);
    entry.place = 'ready';
  };
  /** A lane with nothing ready leaves its site's order, a site with no such lane the sites'. */
  const tidy = (site: ReadySite, lane: ReadyLane) => {
    if (lane.seqs.size > 0) return;
    site.lanes.delete(lane.since);
    site.moved.delete(lane.key);
    site.order.delete(lane.key);
    if (site.lanes.size > 0) return;
    sites.delete(site.since);
    order.delete(site.since);
  };
  const toHeld = (entry: Entry) => {
    const browser = browserOf(entry.item);
    (held.get(browser) ?? held.set(browser, new Map()).get(browser)!).set(entry.seq, entry);
    entry.place = 'held';
  };
  /** Out of its place (the heap's copy is skipped when it comes out). */
  const unplace = (entry: Entry) => {
    if (entry.place === 'ready') {
      const site = sites.get(entry.site);
      const lane = site?.lanes.get(entry.lane);
      if (lane !== undefined) {
        lane.seqs.delete(entry.seq);
        tidy(site!, lane);
      }
    } else if (entry.place === 'held') {
      const browser = held.get(browserOf(entry.item));
      browser?.delete(entry.seq);
      if (browser?.size === 0) held.delete(browserOf(entry.item));
    }
    entry.place = undefined;
  };
  /** Ready now, or held behind a merge: where an entry that may go goes. */
  const place = (entry: Entry) => (behindMerge(entry) ? toHeld(entry) : toReady(entry));
  const wait = (entry: Entry, until: number) => {
    unplace(entry);
    entry.place = 'wait';
    entry.availableAt = until;
    timeline.push(until, entry.seq);
  };
  const wake = (now: number, limit: number) => {
    for (let woken = 0; woken < limit; ) {
      const until = timeline.due(now);
      if (until === undefined) return;
      looked++;
      const entry = entries.get(timeline.take());
      if (entry?.place !== 'wait' || entry.availableAt !== until) continue;
      place(entry);
      woken++;
    }
  };

  /**
   * A lane a lease took an activity from goes behind the lanes waiting (fair.ts RUN: else it would take a run of every
   * lease), as sql-ready.ts moves `since`. One that gave only its identify keeps its place (its tracks wait for it, and
   * a deliverer that holds it back to fill its call releases it to the next lease).
   */
  const behind = (lane: ReadyLane, key: number) => {
    if (lane.site.lanes.get(lane.since) !== lane) return;
    lane.site.order.delete(lane.key);
    lane.site.moved.delete(lane.key);
    lane.key = key;
    lane.site.order.add(key);
    lane.site.moved.set(key, lane);
  };

  return {
    looked: () => looked,
    place,
    unplace,
    wait,
    /** A merge of `item`'s browser left the outbox: what it held up to the next one may go. */
    free(item: Omit<OutboxItem, 'entry'>) {
      const browser = browserOf(item);
      const waiting = held.get(browser);
      if (waiting === undefined) return;
      const first = Math.min(...(merges.get(browser) ?? []));
      for (const entry of [...waiting.values()]) {
        looked++;
        if (entry.seq > first) continue;
        unplace(entry);
        toReady(entry);
      }
    },
    /** Up to `max` entries ready at `now`, in turns by site, then lane (fair.ts): out of the ready (the caller leases them). */
    pick(max: number, now: number): Entry[] {
      wake(now, 2 * max);
      // No site ready: takeFair is not given an empty list (of another element kind, a deoptimisation).
      if (order.size === 0) return [];
      // The merges taken (only a merge holds an entry back: behindMerge), and the entries taken in all.
      const mergesTaken = new Set<number>();
      let taken = 0;
      const visited: ReadyLane[] = []; // the lanes a turn reached (a closure is made for each lane of a page: about as many)
      let deferred = false;
      /** Leases `entry`; answers its browser's next merge when that was held only behind this one: it goes in the same lease. */
      const take = (entry: Entry): Entry | undefined => {
        taken++;
        if (entry.item.kind === 'activity') return undefined;
        mergesTaken.add(entry.seq);
        const after = [...(merges.get(browserOf(entry.item)) ?? [])].filter((seq) => seq > entry.seq);
        const next = after.length > 0 ? entries.get(Math.min(...after)) : undefined;
        return next?.place === 'held' && !behindMerge(next, mergesTaken) ? next : undefined;
      };
      const laneOf = (lane: ReadyLane, mergesToo: boolean): Lane<Entry> => {
        let chained: Entry[] | undefined;
        let reached = false;
        return () => {
          if (!reached) visited.push(lane);
          reached = true;
          let entry = chained?.shift();
          if (entry !== undefined) unplace(entry);
          else {
            for (let seq = lane.seqs.first(); seq !== undefined && entry === undefined; seq = lane.seqs.first()) {
              looked++;
              const next = entries.get(seq)!;
              if (next.item.kind !== 'activity' && !mergesToo && mergesTaken.size >= MERGES_PER_LEASE) {
                deferred = true;
                return undefined;
              }
              lane.seqs.delete(seq);
              next.place = undefined;
              // A merge retried from the dead letters comes back before entries made ready without it: they are held again.
              if (behindMerge(next, mergesTaken)) toHeld(next);
              else entry = next;
            }
            if (entry === undefined) return undefined;
          }
          // Its place after the lease, in the outbox's record of the lane too (a lane emptied here keeps it when it has more).
          if (entry.item.kind === 'activity' && lane.took < 0) lane.took = turnOf(entry).turn = next();
          const merge = take(entry);
          if (merge !== undefined) {
            chained ??= [];
            chained.push(merge);
          }
          return entry;
        };
      };
      // Each site's lanes in pages, as sql-pick.ts reads them: an even share first, the next when its turns reach the last,
      // until a pass has made twice the lease's size of lanes (its first pass's lanes past the bound of identifies answer nothing).
      /** The pass under way: its sites, the lanes made of each and in all, and whether merges go too. */
      let run = { sites: [] as number[], made: [] as number[], all: 0, mergesToo: false };
      const page = (s: number, size: number) => {
        const site = sites.get(run.sites[s]!)!;
        const lanes = site.order.firstOf(Math.max(0, Math.min(size, 2 * max - run.all)), run.made[s]);
        run.made[s] = (run.made[s] ?? 0) + lanes.length;
        run.all += lanes.length;
        return lanes.map((key) => laneOf(site.moved.get(key) ?? site.lanes.get(key)!, run.mergesToo));
      };
      const pass = (mergesToo: boolean) => {
        run = { sites: order.firstOf(max), made: [], all: 0, mergesToo };
        const turns: Lane<Entry>[][] = [];
        for (let s = 0; s < run.sites.length; s++) turns.push(page(s, Math.ceil(Math.max(1, max - taken) / run.sites.length)));
        return turns;
      };
      const picked = takeFairMergesBounded(pass, max, () => deferred, page);
      // Lanes with nothing ready left leave their site's order.
      looked += visited.length;
      // An indexed loop: a second for…of here made an iterator's result for each lane (40 bytes a lane leased).
      for (let i = 0; i < visited.length; i++) {
        const lane = visited[i]!;
        tidy(lane.site, lane);
        if (lane.took >= 0) behind(lane, lane.took);
        lane.took = -1;
      }
      return picked;
    },
  };
}
