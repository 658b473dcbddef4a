/**
 * What the SQLite stores (state and outbox) share: how the file is opened (WAL,
 * `synchronous=FULL`, a busy timeout for other processes' transactions) and group commit, the
 * calls of one turn of the event loop in one write transaction.
 *
 * Durable on commit: with `synchronous=FULL` every commit fsyncs the WAL before it returns, so an
 * item answered `accepted` (and a settle that forgot a delivered entry) survives a power cut or
 * an OS crash, not only a killed process. Group commit makes that one fsync per turn of the event
 * loop, whatever the number of requests in it (bench/durability.ts measures the cost).
 * @module
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'libsql';
import { loadOptional } from './optional.js';

/**
 * Opens (or creates) the SQLite file at `path` with libsql, loaded only now. `neededBy` names
 * what needs it when libsql is missing.
 */
export async function openSqlite(path: string, busyTimeoutMs: number, neededBy: string): Promise<Database.Database> {
  const { default: Sqlite } = await loadOptional<{ default: typeof Database }>('libsql', neededBy);
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Sqlite(path);
  db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  return db;
}

const SYNCHRONOUS = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];

/** How a commit reaches the disk, read back from the connection: e.g. `WAL, synchronous=FULL`. */
export function durabilityOf(db: Database.Database): string {
  // libsql's `simple` answers the row, not its value: read the column.
  const [{ journal_mode: journal }] = db.pragma('journal_mode') as [{ journal_mode: string }];
  const [{ synchronous }] = db.pragma('synchronous') as [{ synchronous: number }];
  return `${journal.toUpperCase()}, synchronous=${SYNCHRONOUS[synchronous] ?? synchronous}`;
}

/**
 * What this process's SQLite connections did so far: statements run, rows they answered or
 * changed, transactions committed (each one fsync of the WAL). Read by bench/diagnose to count
 * the work of a request.
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
 * busy relay pays for a transaction per turn of the event loop, not per request. IMMEDIATE takes
 * the write lock at the start, so two processes sharing the file never lease the same id.
 *
 * When the group's transaction fails, nothing of it was written; each call then runs again in a
 * transaction of its own, so one call that cannot be written fails alone and later calls are
 * not held back by it.
 *
 * @param before runs first in every transaction (the slice of expiry)
 */
export function groupCommit(db: Database.Database, before: () => void = () => {}) {
  let waiting: Call[] = [];
  const runAll = db.transaction((calls: Call[]) => {
    before();
    return calls.map((call) => call.run());
  }).immediate;
  const runOne = db.transaction((call: Call) => call.run()).immediate;

  const commit = () => {
    const calls = waiting;
    waiting = [];
    let results: unknown[];
    try {
      results = runAll(calls);
      sqliteCounts.commits++;
    } catch {
      for (const call of calls) {
        try {
          call.resolve(runOne(call) as never);
        } catch (error) {
          call.reject(error);
        }
      }
      return;
    }
    for (const [index, call] of calls.entries()) call.resolve(results[index] as never);
  };

  return <T>(run: () => T): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      // After the callbacks of this turn (setImmediate): every request that arrived with this one joins.
      if (waiting.length === 0) setImmediate(commit);
      waiting.push({ run, resolve: resolve as (value: never) => void, reject });
    });
}
