/**
 * What the SQLite stores (state and outbox) share: how the file is opened (WAL, a busy timeout
 * for other processes' transactions) and group commit, the calls that arrive together in one
 * write transaction.
 *
 * Durable before any answer, two ways:
 *  - `synchronous=FULL` (the state store): every commit fsyncs the WAL before it returns, on the
 *    event loop;
 *  - `synchronous=NORMAL` and the WAL fdatasynced off the event loop after each commit, before
 *    any call of it is answered (the outbox: {@link groupCommit}'s `sync`, sqlite-wal.ts). The
 *    commit only appends its frames to the -wal file; the fdatasync that follows puts them on the
 *    disk, as FULL's fsync inside the commit would, while HTTP keeps being served.
 * Either way an item answered `accepted` (and a settle that forgot a delivered entry) survives a
 * power cut or an OS crash, not only a killed process (bench/durability.ts measures the cost).
 * @module
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { CommitSyncError } from './sql-port.js';
import { immediate, openDriver, pragma, type SqliteDb, type SqliteDriverName } from './sqlite-driver.js';

/**
 * The WAL's pages between two automatic checkpoints (SQLite's `wal_autocheckpoint`, 1,000 by
 * default). A checkpoint runs inside the commit that crossed it, on the event loop: it syncs the
 * WAL, copies the newest copy of each page it holds into the database file and syncs that. Small
 * commits rewrite the same pages (the counts, the lanes' and the ready index's last leaves), so
 * four times fewer checkpoints copy about a third as many pages, with a quarter of their syncs
 * (bench/README, "What an item costs below saturation"); the -wal file grows to about 16 MB
 * instead of 4 before it starts again from its beginning.
 */
export const WAL_CHECKPOINT_PAGES = 4000;

/**
 * The outbox's page cache in KiB (SQLite's `cache_size`; 2,000 by default). A lease takes up to
 * 1,000 entries, at saturation one or two of each visitor, so nearly one a page: about 4 MB of
 * pages, which its calls' settles then delete from. In 2 MB the lease's own reads pushed them out
 * and every settle read them back from the file, a read and a WAL lookup a page (bench/README,
 * "The outbox's page cache").
 */
export const OUTBOX_CACHE_KIB = 4096;

/**
 * Opens (or creates) the SQLite file at `path` with the driver chosen (sqlite-driver.ts: Node's own
 * where it has one, else libsql, loaded only now; `neededBy` names what needs libsql when it is
 * missing). `syncedByCaller`: commits do not wait for the disk (`synchronous=NORMAL`), the caller
 * syncs the WAL before it answers (groupCommit's `sync`).
 */
export async function openSqlite(
  path: string,
  busyTimeoutMs: number,
  neededBy: string,
  syncedByCaller = false,
  driver?: SqliteDriverName | undefined,
): Promise<SqliteDb> {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = await openDriver(path, neededBy, driver);
  try {
    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    db.exec('PRAGMA journal_mode = WAL');
    db.exec(syncedByCaller && path !== ':memory:' ? 'PRAGMA synchronous = NORMAL' : 'PRAGMA synchronous = FULL');
    // On every connection to the file: whichever commits past the mark runs the checkpoint.
    db.exec(`PRAGMA wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
    // The outbox's connection (the only one whose caller syncs): room for a lease's pages.
    if (syncedByCaller) db.exec(`PRAGMA cache_size = -${OUTBOX_CACHE_KIB}`);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

const SYNCHRONOUS = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];

/**
 * How a commit reaches the disk, read back from the connection: e.g. `WAL, synchronous=FULL`,
 * or `WAL, synchronous=NORMAL, WAL synced before each answer` when `synced` (groupCommit's `sync`).
 */
export function durabilityOf(db: SqliteDb, synced = false): string {
  const journal = String(pragma(db, 'journal_mode'));
  const synchronous = Number(pragma(db, 'synchronous'));
  const pragmas = `${journal.toUpperCase()}, synchronous=${SYNCHRONOUS[synchronous] ?? synchronous}`;
  return synced ? `${pragmas}, WAL synced before each answer` : pragmas;
}

/**
 * What this process's SQLite connections did so far: statements run, rows they answered or
 * changed, transactions committed (each that changed a row one sync of the WAL). Read by
 * bench/diagnose to count the work of a request.
 */
export const sqliteCounts = { statements: 0, rows: 0, commits: 0 };

interface Call {
  run: () => unknown;
  resolve: (value: never) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: the calls made while the event loop is busy with other callbacks (the requests
 * that arrived together) run in ONE `BEGIN IMMEDIATE` … `COMMIT`, in the order they were made,
 * each Promise answered with its own result. One transaction costs what one call's did, so a
 * busy relay pays for a transaction per group, not per request. IMMEDIATE takes the write lock at
 * the start, so two processes sharing the file never lease the same id.
 *
 * When the group's transaction fails, nothing of it was written; each call then runs again in a
 * transaction of its own, so one call that cannot be written fails alone and later calls are
 * not held back by it.
 *
 * With `sync` (a connection opened with `synchronous=NORMAL`, {@link openSqlite} `syncedByCaller`)
 * the commit appends to the WAL without waiting for the disk, and `sync` (an fdatasync of the WAL,
 * off the event loop) runs after it. No call is answered before the sync that followed its commit
 * has ended, and no transaction begins while a sync runs: every answer, and everything a later
 * transaction reads, is on the disk. The calls made during the disk's wait share the next
 * transaction (group commit across the wait, not only one turn of the event loop). A sync that
 * fails fails every call of its group with a {@link CommitSyncError} (its cause inside); the
 * next group goes on. A group that changed no row (an idle deliverer's empty lease, a read)
 * appended nothing to the WAL: it is answered without a sync of its own when what it read is on
 * the disk too, that is when no other connection (another relay process sharing the file, the
 * state store's) committed since this connection's last sync began (`PRAGMA data_version` is
 * the same) and that sync did not fail. Otherwise it may have read frames not yet synced (an id
 * another process has just accepted, answered here `duplicate`), and it syncs them first.
 *
 * @param before runs first in every transaction (the slice of expiry)
 */
export function groupCommit(db: SqliteDb, before: () => void = () => {}, sync?: () => Promise<void>) {
  let waiting: Call[] = [];
  let syncing = false;
  let scheduled = false;
  /** The rows this connection had changed when the last group committed (SQLite's `total_changes()`). */
  const totalChanges = sync && db.prepare('SELECT total_changes()');
  let changedBefore = -1;
  /** Whether the last group changed a row (known where it is synced by the caller): set by {@link runCalls}. */
  let changed = true;
  /** Other connections' commits as this one sees them: the value moves when one commits. */
  const dataVersion = sync && db.prepare('PRAGMA data_version');
  /** `data_version` in the last group whose sync ended well (-1: none, or one failed since). */
  let syncedVersion = -1;
  /** `data_version` in the last group. */
  let version = -1;
  const runAll = immediate(db, (calls: Call[]) => {
    before();
    const results = calls.map((call) => call.run());
    if (totalChanges) {
      const total = Number(totalChanges.get()?.[0]);
      changed = total !== changedBefore;
      changedBefore = total;
    }
    if (dataVersion) version = Number(dataVersion.get()?.[0]);
    return results;
  });
  const runOne = immediate(db, (call: Call) => call.run());

  /** Each call's answer once its transaction committed (or failed), to give once the WAL is synced. */
  const runCalls = (calls: Call[]): (() => void)[] => {
    try {
      const results = runAll(calls);
      sqliteCounts.commits++;
      return calls.map((call, index) => () => call.resolve(results[index] as never));
    } catch {
      // Rolled back, each call again alone: whatever they wrote is synced.
      changed = true;
      return calls.map((call) => {
        try {
          const result = runOne(call);
          sqliteCounts.commits++;
          return () => call.resolve(result as never);
        } catch (error) {
          return () => call.reject(error);
        }
      });
    }
  };

  const commit = () => {
    scheduled = false;
    const calls = waiting;
    waiting = [];
    const answers = runCalls(calls);
    if (sync === undefined || (!changed && version === syncedVersion)) {
      for (const answer of answers) answer();
      return;
    }
    syncing = true;
    const synced = version;
    sync().then(
      () => {
        syncing = false;
        syncedVersion = synced;
        for (const answer of answers) answer();
        schedule();
      },
      (error: unknown) => {
        // Written, but maybe not on the disk: none of them is answered as done, none runs again.
        syncing = false;
        // Until a sync ends well, no group is answered without one: a resend read as `duplicate` syncs first.
        syncedVersion = -1;
        const failed = new CommitSyncError(error);
        for (const call of calls) call.reject(failed);
        schedule();
      },
    );
  };
  const schedule = () => {
    if (scheduled || syncing || waiting.length === 0) return;
    scheduled = true;
    // After the callbacks of this turn (setImmediate): every request that arrived with this one joins.
    setImmediate(commit);
  };

  return <T>(run: () => T): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      waiting.push({ run, resolve: resolve as (value: never) => void, reject });
      schedule();
    });
}
