/**
 * The suppression list as `/collect` reads it: items naming an erased person are answered
 * `rejected` (`suppressed`) and never stored (erase.ts). The list lives in the outbox's
 * store, shared by every relay of a deployment; each process (or isolate) keeps a copy no older
 * than {@link SUPPRESSION_REFRESH_MS} (a request that finds it older reads the list before it
 * answers), so an accept mostly costs no store statement, and an item is hashed only when its
 * site has someone suppressed.
 * @module
 */
import { namedPeople, personHash, type Suppression } from './erase.js';
import type { Outbox } from './outbox.js';
import { createLastValues } from '../core/last-value.js';

/** How old a process's copy of the list may be: an erasure waits this long before it sweeps the outbox, so every relay refuses the person by then. */
export const SUPPRESSION_REFRESH_MS = 2_000;

export interface SuppressionList {
  /**
   * The test of one request's entries (whether an entry names someone suppressed on `site`), or
   * undefined when nobody is suppressed there (nothing to hash): the copy reloaded first when older
   * than the refresh.
   */
  check(site: string, now: number): Promise<((entry: Record<string, unknown>) => boolean) | undefined>;
  /** Rows this process just added to the store: in its copy at once. */
  add(rows: readonly Suppression[]): void;
  /** How long a copy may be used. */
  readonly refreshMs: number;
}

/** Each site's suppressed hashes ('' for everywhere). */
type Rows = Map<string, Set<string>>;

const put = (into: Rows, { site, hash }: Suppression) => (into.get(site) ?? into.set(site, new Set()).get(site)!).add(hash);

/**
 * The list kept by `outbox` (none without one); `onError` hears a reload that failed (the old copy
 * is kept meanwhile, and used until the refresh comes round again). A request whose copy is too old
 * reads the list itself, and the newest read is kept: a request never waits on another's read
 * (core/last-value.ts), as workerd requires of an isolate (test/workerd/cut-off.test.ts). With
 * `shareReads` (Node, where a read belongs to no request) the requests that come while a read
 * is under way wait for that one instead, so a process has one read in flight at a time.
 */
export function createSuppressionList(outbox: Outbox | undefined, refreshMs: number, onError: (error: unknown) => void, shareReads = false): SuppressionList {
  const copy = createLastValues<Rows>({ freshMs: refreshMs, share: shareReads, maxKeys: 1 });
  const read = async (now: number): Promise<Rows> => {
    try {
      const fresh: Rows = new Map();
      for (const row of await outbox!.suppressed(now)) put(fresh, row);
      return fresh;
    } catch (error) {
      onError(error);
      return copy.peek('')?.value ?? new Map();
    }
  };

  return {
    refreshMs,
    async check(site, now) {
      if (outbox === undefined) return undefined;
      const rows = (await copy.get('', now, () => read(now))).value;
      const everywhere = rows.get('');
      const here = rows.get(site);
      if (everywhere === undefined && here === undefined) return undefined;
      // A request's items mostly name one person: each identifier is hashed once per request.
      const known = new Map<string, boolean>();
      const listed = (hash: string) => everywhere?.has(hash) === true || here?.has(hash) === true;
      return (entry) => namedPeople(entry).some((named) => known.get(named) ?? known.set(named, listed(personHash(named))).get(named)!);
    },
    add(added) {
      // Before the first read there is no copy: that read finds them in the store.
      const rows = copy.peek('')?.value;
      if (rows !== undefined) for (const row of added) put(rows, row);
    },
  };
}
