/**
 * The fdatasync of an SQLite file's WAL, off the event loop (libuv's thread pool): what
 * `synchronous=FULL` does inside each commit, for groupCommit's `sync` (sqlite-file.ts).
 *
 * Why it is enough: in WAL mode a commit appends its pages and a commit frame to the `-wal` file
 * and nothing else; with `synchronous=NORMAL` SQLite does not sync them, and one fdatasync of that
 * file afterwards puts them on the disk (a descriptor of our own flushes what every connection and
 * process wrote to the file). What SQLite does not leave to a commit, it still syncs itself: the
 * WAL's header when the log starts again from its beginning after a checkpoint (the same file,
 * rewritten in place), the WAL and the database file around each checkpoint, the directory when
 * the -wal file is created.
 *
 * The -wal file can be replaced: the last connection to close deletes it (after a full
 * checkpoint), the next one creates another. Each sync checks the path's inode against the
 * descriptor's and opens the file again when they differ; with no -wal file at all, the database
 * file is synced instead (where a deleted WAL's pages went).
 *
 * Unless the caller holds a connection to the database open across every sync (`held`, the SQLite
 * outbox): an open connection keeps its lock on the WAL's shared memory, so no other connection's
 * close is the last one, and nothing deletes or replaces the -wal file (a checkpoint restarts it
 * in place, the same inode). Then the descriptor opened once is synced alone, without a `stat` of
 * the path on every commit: one call to the thread pool per commit instead of two. The path is
 * looked at again only while no descriptor is held (the first sync, or after an error).
 * @module
 */
import { type FileHandle, open, stat } from 'node:fs/promises';

export interface WalSync {
  /** fdatasync of the -wal file of the database, in the thread pool */
  sync(): Promise<void>;
  close(): Promise<void>;
}

export interface WalSyncOptions {
  /**
   * the caller keeps a connection to the database open from before the first sync until after
   * `close`: the -wal file cannot be replaced meanwhile, and its path is not checked on each sync
   * @default false
   */
  held?: boolean;
}

/** The WAL sync of the SQLite database at `path` (not `:memory:`). */
export function walSync(path: string, options: WalSyncOptions = {}): WalSync {
  const wal = `${path}-wal`;
  let file: { handle: FileHandle; ino: number; dev: number } | undefined;
  const drop = async () => {
    const was = file;
    file = undefined;
    await was?.handle.close().catch(() => {});
  };
  const reopen = async () => {
    await drop();
    const handle = await open(wal, 'r');
    const { ino, dev } = await handle.stat();
    file = { handle, ino, dev };
    return handle;
  };
  return {
    async sync() {
      try {
        const held = file;
        // The -wal file cannot have been replaced since it was opened (options.held): sync it alone.
        if (held !== undefined && options.held === true) return await held.handle.datasync();
        // The check and the sync of the descriptor held run side by side: both began after the
        // commit, and a -wal file is replaced only after a checkpoint put its pages in the
        // database file and synced it.
        const [now] = await Promise.all([
          stat(wal).catch((error: NodeJS.ErrnoException) => {
            if (error.code === 'ENOENT') return undefined;
            throw error;
          }),
          held?.handle.datasync(),
        ]);
        if (now === undefined) {
          const db = await open(path, 'r');
          await db.datasync().finally(() => db.close());
        } else if (held === undefined || held.ino !== now.ino || held.dev !== now.dev) {
          await (await reopen()).datasync();
        }
      } catch (error) {
        // A descriptor that saw an error is not trusted again: the next sync opens the file anew.
        await drop();
        throw error;
      }
    },
    close: drop,
  };
}
