/**
 * A real redis-server for the tests: Debian's package, started on a free loopback port with its
 * own temporary directory, persistent as a relay needs it (append-only file fsynced on every
 * write, no eviction) unless a test asks otherwise, and stopped afterwards. When it is missing, CI
 * (CDP_EDGE_REQUIRE_REDIS=1) fails loudly; anywhere else the suite says "SKIPPED: no redis-server"
 * in capitals, never silently.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const REDIS_SERVER = process.env['CDP_EDGE_REDIS_SERVER'] ?? 'redis-server';

/**
 * The command timeout of the stores the tests open on Redis: a test of what a store does, not of the
 * relay's 2 s default, which a loaded machine can meet (an accept of 2,100 items took 1.6 s at load 18).
 */
export const TEST_COMMAND_TIMEOUT_MS = 10_000;

/** True when redis-server runs here. Throws when it does not and CI requires it; otherwise prints a loud SKIPPED line. */
export function redisAvailable(suite: string): boolean {
  const probe = spawnSync(REDIS_SERVER, ['--version'], { encoding: 'utf8' });
  if (probe.status === 0) return true;
  const why = `no ${REDIS_SERVER} on this machine (install the Debian package "redis-server")`;
  if (process.env['CDP_EDGE_REQUIRE_REDIS'] === '1') throw new Error(`${suite}: ${why}, and CDP_EDGE_REQUIRE_REDIS=1 requires it`);
  const line = `SKIPPED: no redis-server — ${suite} did not run: ${why}`;
  console.warn(`\n${'!'.repeat(line.length)}\n${line}\n${'!'.repeat(line.length)}\n`);
  return false;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface RunningRedis {
  url: string;
  port: number;
  /** stops the server (SIGTERM, or SIGKILL with `kill: true`); `restart` starts it again */
  stop(options?: { kill?: boolean }): Promise<void>;
  /** starts it again on the same port (its data is gone when started with `persist: false`) */
  restart(): Promise<void>;
  /** stops it for good and removes its directory */
  close(): Promise<void>;
}

/** Runs one command with redis-cli against `port`; rejects on an error answer. */
async function redisCli(port: number, args: string[]): Promise<string> {
  const result = spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' });
  if (result.status !== 0 || result.stdout.startsWith('ERR')) throw new Error(`redis-cli ${args.join(' ')}: ${result.stdout}${result.stderr}`);
  return result.stdout;
}

async function waitForPort(port: number, child: ChildProcess, timeoutMs = 10_000): Promise<void> {
  const { connect } = await import('node:net');
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode} before listening on ${port}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`redis-server did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** What a relay needs of Redis (the relay refuses any other persistence unless RELAY_REDIS_UNSAFE=on). */
const SAFE = ['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction'];

/**
 * Starts redis-server on a free loopback port. By default it writes every command to an
 * append-only file before answering, so a restart keeps the data: what a relay requires.
 * `persist: false` starts one without persistence (`appendonly no`), which a relay refuses to
 * start on unless RELAY_REDIS_UNSAFE=on. `rdb` loads that dump file first (a state another
 * release wrote), then turns the append-only file on.
 */
export async function startRedis(options: { persist?: boolean; rdb?: string } = {}): Promise<RunningRedis> {
  const port = await freePort();
  // In memory when the machine has a tmpfs: the settings are a production Redis's, but an fsync of
  // the append-only file costs nothing, so a loaded disk does not time out the tests' commands.
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'cdp-redis-'));
  const persist = options.persist ?? true;
  let child: ChildProcess;
  let loaded = options.rdb === undefined;
  if (options.rdb !== undefined) copyFileSync(options.rdb, join(dir, 'dump.rdb'));
  const start = async () => {
    // Redis reads a dump only when no append-only file is on: the first start loads it, then turns the file on.
    const persistence = persist && loaded ? SAFE : ['--appendonly', 'no'];
    child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence, '--dir', dir], {
      stdio: 'ignore',
    });
    await waitForPort(port, child);
    if (!loaded) {
      loaded = true;
      if (persist) await redisCli(port, ['CONFIG', 'SET', ...SAFE.map((arg) => arg.replace(/^--/, ''))]);
    }
  };
  const stop = async (options: { kill?: boolean } = {}) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(options.kill ? 'SIGKILL' : 'SIGTERM');
    await exited;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    async restart() {
      await stop();
      await start();
    },
  };
}
