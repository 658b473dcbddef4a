/**
 * A real redis-server for the tests: Debian's package, started on a free loopback port with its
 * own temporary directory, no persistence, and stopped afterwards. When it is missing, CI
 * (CDP_EDGE_REQUIRE_REDIS=1) fails loudly; anywhere else the suite says "SKIPPED: no redis-server"
 * in capitals, never silently.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const REDIS_SERVER = process.env['CDP_EDGE_REDIS_SERVER'] ?? 'redis-server';

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
  /** starts it again on the same port (its data is gone unless started with `persist`) */
  restart(): Promise<void>;
  /** stops it for good and removes its directory */
  close(): Promise<void>;
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

/**
 * Starts redis-server on a free loopback port. `persist` writes every command to an append-only
 * file before answering (what a production Redis holding dedupe state needs), so a restart keeps the data.
 */
export async function startRedis(options: { persist?: boolean } = {}): Promise<RunningRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'cdp-redis-'));
  let child: ChildProcess;
  const start = async () => {
    const persistence = options.persist ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
    child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence, '--dir', dir], {
      stdio: 'ignore',
    });
    await waitForPort(port, child);
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
