/**
 * What the SQL outbox (sql-outbox.ts, sql-lanes.ts) needs of an SQLite database, whoever runs it:
 * libsql on Node, a Durable Object's storage on Workers.
 * @module
 */

/** A value SQLite binds or answers (bytes: a blob). */
export type SqlValue = string | number | null | Uint8Array;
/** A row as an array, in the order of the statement's columns. */
export type Row = unknown[];

/**
 * What the outbox needs of an SQLite database: statements with numbered parameters (`?1`), and a
 * transaction. On Node the transaction is libsql's `BEGIN IMMEDIATE` shared by the calls of one turn
 * of the event loop (group commit); in a Durable Object it is `ctx.storage.transactionSync`.
 */
export interface SqlPort {
  /** Runs statements without parameters (the schema). */
  exec(script: string): void;
  /** Runs one statement; its rows. */
  query(sql: string, ...params: SqlValue[]): Row[];
  /** Runs one statement; how many rows it changed. */
  run(sql: string, ...params: SqlValue[]): number;
  /** Runs `fn` in one transaction: all of its writes or none. */
  transaction<T>(fn: () => T): Promise<T>;
}

/**
 * A transaction that was committed but whose sync to the disk failed (sqlite-file.ts): what it
 * wrote is seen by later transactions but may be lost to a power cut. Its calls fail with this;
 * nothing of it runs again (a second run would find its own writes). The disk's error is `cause`.
 */
export class CommitSyncError extends Error {
  constructor(cause: unknown) {
    super(`committed, but the sync of the WAL to the disk failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'CommitSyncError';
  }
}

/**
 * A whole number as the 10 digits a statement cuts out of a string with `substr` (a list of such
 * strings in JSON): read so, a field costs SQLite less than `->>` of an array in the list, which
 * `json_each` writes back as text and `->>` parses again for each field (bench/README). One past 10
 * digits (a lane or seq no file reaches) throws, where cut at 10 it would name another row.
 */
export const digits = (n: number): string => {
  if (n > 9_999_999_999) throw new RangeError(`outbox: ${n} is past the 10 digits a statement cuts`);
  const text = String(n);
  // The zeros before it from a list made once: `padStart` made its filler anew each time, the most bytes of the
  // outbox's own strings (bench/README, "What a `/collect` request allocates"): one string a number now, beside its digits.
  return text.length >= 10 ? text : ZEROS[10 - text.length]! + text;
};

/** A whole number that may be negative (a count's change) as its sign and 10 digits, 11 characters cut as {@link digits} are. */
export const signed = (n: number): string => {
  const abs = Math.abs(n);
  if (abs > 9_999_999_999) throw new RangeError(`outbox: ${n} is past the 10 digits a statement cuts`);
  const text = String(abs);
  return text.length >= 10 ? (n < 0 ? '-' : '+') + text : (n < 0 ? MINUS : PLUS)[10 - text.length]! + text;
};

/** Index k: k zeros, alone and after each sign (the fillers of {@link digits} and {@link signed}). */
const ZEROS = Array.from({ length: 11 }, (_, k) => '0'.repeat(k));
const MINUS = ZEROS.map((zeros) => `-${zeros}`);
const PLUS = ZEROS.map((zeros) => `+${zeros}`);
