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

/** The list kept by `outbox` (none without one); `onError` hears a reload that failed (the old copy is kept meanwhile). */
export function createSuppressionList(outbox: Outbox | undefined, refreshMs: number, onError: (error: unknown) => void): SuppressionList {
  let rows = new Map<string, Set<string>>();
  let loadedAt = Number.NEGATIVE_INFINITY;
  const put = (into: Map<string, Set<string>>, { site, hash }: Suppression) => (into.get(site) ?? into.set(site, new Set()).get(site)!).add(hash);

  // Each request whose copy is too old reads the list itself, and the newest read is kept: a
  // request never waits on another's read. In workerd a read belongs to the request that made it,
  // and one whose client goes away takes its read with it: a shared promise of it would never
  // settle, and every /collect of the isolate would wait on it (test/workerd/cut-off.test.ts).
  const reload = async (now: number) => {
    try {
      const fresh = new Map<string, Set<string>>();
      for (const row of await outbox!.suppressed(now)) put(fresh, row);
      if (now >= loadedAt) rows = fresh;
    } catch (error) {
      onError(error);
    } finally {
      loadedAt = Math.max(loadedAt, now);
    }
  };

  return {
    refreshMs,
    async check(site, now) {
      if (outbox === undefined) return undefined;
      if (now - loadedAt >= refreshMs) await reload(now);
      const everywhere = rows.get('');
      const here = rows.get(site);
      if (everywhere === undefined && here === undefined) return undefined;
      // A request's items mostly name one person: each identifier is hashed once per request.
      const known = new Map<string, boolean>();
      const listed = (hash: string) => everywhere?.has(hash) === true || here?.has(hash) === true;
      return (entry) => namedPeople(entry).some((named) => known.get(named) ?? known.set(named, listed(personHash(named))).get(named)!);
    },
    add(added) {
      for (const row of added) put(rows, row);
    },
  };
}
