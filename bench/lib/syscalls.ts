/**
 * What a process asks of its SQLite file's disk, counted by the kernel (`perf stat` on the syscall
 * tracepoints, no hook inside the process, all its threads): syncs (`fdatasync`, `fsync`: the
 * outbox's WAL sync after each group commit, and any `synchronous=FULL` commit's or checkpoint's)
 * and `pwrite64`s into its `-wal` file (two a WAL frame: the frame's header, then its page) and
 * into the database file (a checkpoint's pages), and the syncs of the database file (one a
 * checkpoint). Linux, root (or perf_event_paranoid ≤ 1), `perf`.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';

export interface DiskCounts {
  fdatasync: number;
  fsync: number;
  /** pwrite64 calls into the -wal file (2 a frame) */
  walWrites: number;
  /** pwrite64 calls into the database file (checkpoints) */
  dbWrites: number;
  /** fdatasync and fsync calls on the database file: one a checkpoint, after it copied the WAL's pages */
  dbSyncs: number;
}

/** The descriptors `pid` holds open on `path` (its links in /proc). */
function descriptors(pid: number, path: string): number[] {
  const fds: number[] = [];
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) === path) fds.push(Number(fd));
    } catch {
      // closed meanwhile
    }
  }
  return fds;
}

const filter = (fds: number[]) => (fds.length === 0 ? 'fd == -1' : fds.map((fd) => `fd == ${fd}`).join(' || '));

/**
 * Starts counting the disk calls of `pid` on the SQLite file `db` (its threads of now: call it once
 * the process has served a little, so libuv's pool threads exist); `stop` ends and reads the count.
 */
export async function countDisk(pid: number, db: string): Promise<{ stop(): Promise<DiskCounts> }> {
  const args = ['stat', '-x', ',', '-p', String(pid)];
  args.push('-e', 'syscalls:sys_enter_fdatasync', '-e', 'syscalls:sys_enter_fsync');
  args.push('-e', 'syscalls:sys_enter_pwrite64', '--filter', filter(descriptors(pid, `${db}-wal`)));
  const dbFds = filter(descriptors(pid, db));
  args.push('-e', 'syscalls:sys_enter_pwrite64', '--filter', dbFds);
  args.push('-e', 'syscalls:sys_enter_fdatasync', '--filter', dbFds, '-e', 'syscalls:sys_enter_fsync', '--filter', dbFds);
  const perf = spawn('perf', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let out = '';
  perf.stderr.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const exited = new Promise<void>((resolve, reject) => {
    perf.once('error', reject);
    perf.once('exit', () => resolve());
  });
  // perf prints nothing until it stops; give it a moment to attach before the measure begins
  await new Promise((resolve) => setTimeout(resolve, 300));
  return {
    async stop() {
      perf.kill('SIGINT');
      await exited;
      const counts = out
        .split('\n')
        .filter((line) => line.includes('syscalls:'))
        .map((line) => Number(line.split(',')[0]));
      if (counts.length !== 6 || counts.some(Number.isNaN)) throw new Error(`perf stat said: ${out}`);
      const [fdatasync, fsync, walWrites, dbWrites, dbDatasyncs, dbFsyncs] = counts as [number, number, number, number, number, number];
      return { fdatasync, fsync, walWrites, dbWrites, dbSyncs: dbDatasyncs + dbFsyncs };
    },
  };
}
