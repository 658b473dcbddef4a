/**
 * Fair leasing, once for the stores that lease in JavaScript (memory, SQLite; Redis runs the same
 * turns in Lua): one entry per site in turn, each site's turn going to its visitors in turn, and
 * each visitor's entries in `seq` order. Sites and visitors come in the order the store gives
 * them (the longest-waiting first), so across leases nobody is passed over for long either.
 * @module
 */

/** One visitor's entries: the next ready one, or undefined once it has no more ready. */
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
        entry = site.lanes[site.next]!();
        if (entry !== undefined) {
          site.next++;
          break;
        }
        site.lanes.splice(site.next, 1);
      }
      if (entry === undefined) turns.splice(s, 1);
      else {
        taken.push(entry);
        s++;
      }
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

const ascending = (a: number, b: number) => a - b;

/**
 * Shares of `budget` taken in turns by parts that hold `caps` each: each part its cap or the level
 * the budget reaches, whichever is less, and one more above the level for those that hold more
 * (the last turn's remainder, whoever it falls to): at most one more per part than the budget.
 */
export function fill(caps: readonly number[], budget: number): number[] {
  const sorted = caps.slice().sort(ascending);
  let left = budget;
  let level = 0;
  for (let i = 0; i < sorted.length; i++) {
    const cap = sorted[i]!;
    const rest = sorted.length - i;
    if ((cap - level) * rest > left) {
      level += Math.ceil(left / rest);
      break;
    }
    left -= (cap - level) * rest;
    level = cap;
  }
  return caps.map((cap) => Math.min(cap, level));
}
