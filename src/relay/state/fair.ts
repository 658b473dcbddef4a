/**
 * Fair leasing, once for the stores that lease in JavaScript (memory, SQLite; Redis runs the same
 * turns in Lua): one run of entries per site in turn, each site's turn going to its visitors in
 * turn, and each visitor's entries in `seq` order. Sites and visitors come in the order the store
 * gives them (the longest-waiting first), so across leases nobody is passed over for long either.
 * @module
 */

/**
 * The entries a visitor's turn takes at most: a `/collect` request's usual batch. A request's items
 * are one visitor's, accepted together, so they lie in consecutive rows, mostly in one page of the
 * SQL outbox: a turn of one entry gave a call of 100 entries about 100 visitors' pages, each
 * written again at that visitor's next call, where runs give it about a tenth as many
 * (bench/README, "The relay beside a bare pass-through"). Fairness keeps its shape at this grain:
 * visitors in turn, and a lone visitor gets the whole lease. Across leases, a visitor a lease took a
 * whole run from goes behind the others (each store moves its lane's place: sql-ready.ts `since`):
 * a lease meets a tenth as many visitors as one entry a turn did, and a visitor that kept its place
 * would take a run of every lease while those behind it waited.
 */
export const RUN = 10;

/** One visitor's entries: the next ready one, or undefined once it has no more ready (and again if asked again). */
export type Lane<T> = () => T | undefined;

/** One site's turn: its lanes not yet done, the one whose turn is next, and whether it may have more lanes than it was given. */
interface Turn<T> {
  lanes: Lane<T>[];
  next: number;
  site: number;
  open: boolean;
}

/**
 * A site's next lanes in the order of those it was given, read when its turns have reached the
 * last it holds (so as many as a lease's turns take are read, not a guess of them): `need` is the
 * room the lease has left for each site still taking. An empty list: the site has no more.
 */
export type MoreLanes<T> = (site: number, need: number) => readonly Lane<T>[];

/**
 * Takes up to `max` entries in turns from `sites` (each a list of its visitors' lanes). A lane
 * that answers undefined is done for this lease; a site whose lanes are all done drops out, unless
 * `more` gives it lanes past them: the turns are those of every lane given together.
 *
 * Hot at every lease, so its optimised code should see one shape of array: `map` over no sites
 * gives an array of another element kind than over some (V8's "wrong map" threw the code away),
 * so its arrays are literals that `push` fills the same way on every call, and a lease with no
 * lane to take returns before it reads one left empty.
 */
export function takeFair<T>(sites: readonly (readonly Lane<T>[])[], max: number, more?: MoreLanes<T>): T[] {
  const taken: T[] = [];
  const turns: Turn<T>[] = [];
  for (let s = 0; s < sites.length; s++) {
    const lanes = sites[s]!;
    if (lanes.length === 0) continue;
    const own: Lane<T>[] = [];
    for (const lane of lanes) own.push(lane);
    turns.push({ lanes: own, next: 0, site: s, open: more !== undefined });
  }
  if (turns.length === 0) return taken;
  while (taken.length < max && turns.length > 0) {
    for (let s = 0; s < turns.length && taken.length < max; ) {
      const site = turns[s]!;
      let entry: T | undefined;
      for (;;) {
        if (site.next >= site.lanes.length) {
          // Past its last lane: the lanes after it come before its first again.
          if (site.open) {
            const page = more!(site.site, Math.ceil((max - taken.length) / turns.length));
            for (const lane of page) site.lanes.push(lane);
            site.open = page.length > 0;
          }
          if (site.next >= site.lanes.length) site.next = 0;
          if (site.lanes.length === 0) break;
        }
        const lane = site.lanes[site.next]!;
        entry = lane();
        if (entry !== undefined) {
          taken.push(entry);
          // The rest of the lane's run. One that ran out leaves at its next turn, when it answers undefined
          // again (not here: a splice for each lane of one entry, and an array for what it removed).
          for (let n = 1; n < RUN && taken.length < max; n++) {
            const more = lane();
            if (more === undefined) break;
            taken.push(more);
          }
          site.next++;
          break;
        }
        site.lanes.splice(site.next, 1);
      }
      if (entry === undefined) turns.splice(s, 1);
      else s++;
    }
  }
  return taken;
}

/**
 * Merges (identifies) one lease takes at most while other entries are ready: one call's worth. A
 * deliverer sends a lease's activities once its merge calls are answered (deliver/lease-run.ts),
 * so a lease full of the identifies of many new visitors would leave the key's calls idle while
 * it waits for those answers. The merges past it go in the next lease, or in this one when nothing else is ready.
 */
export const MERGES_PER_LEASE = 100;

/**
 * {@link takeFair} in up to two passes over lanes made by `lanes(mergesToo)`: in the first, a lane
 * whose next entry is a merge past {@link MERGES_PER_LEASE} answers undefined (and the store notes
 * it deferred one); a second pass, with merges, fills what room the first left when it deferred any.
 * `more`: as {@link takeFair}'s, for the lanes of the pass under way.
 */
export function takeFairMergesBounded<T>(
  lanes: (mergesToo: boolean) => (readonly Lane<T>[])[],
  max: number,
  deferred: () => boolean,
  more?: MoreLanes<T>,
): T[] {
  const taken = takeFair(lanes(false), max, more);
  if (taken.length < max && deferred()) for (const entry of takeFair(lanes(true), max - taken.length, more)) taken.push(entry);
  return taken;
}

/**
 * Shares of `budget` taken in turns of up to `run` each by parts that hold `caps` each, in their
 * order: what {@link takeFair}'s turns give each lane (or site) when every part gives all it holds.
 */
export function fill(caps: readonly number[], budget: number, run = RUN): number[] {
  const shares = caps.map(() => 0);
  let open: number[] = [];
  for (let i = 0; i < caps.length; i++) if (caps[i]! > 0) open.push(i);
  let left = budget;
  // Each step takes at least one entry or closes a part: at most budget + parts steps.
  while (left > 0 && open.length > 0) {
    const still: number[] = [];
    for (let k = 0; k < open.length && left > 0; k++) {
      const i = open[k]!;
      const take = Math.min(run, caps[i]! - shares[i]!, left);
      shares[i] = shares[i]! + take;
      left -= take;
      if (shares[i]! < caps[i]!) still.push(i);
    }
    open = still;
  }
  return shares;
}
