/**
 * A real nginx for the routing tests: Debian's package, one process (no master, no user switch)
 * with its own temporary prefix, serving the `server { … }` blocks a test gives on loopback. When
 * nginx is missing, CI (CDP_EDGE_REQUIRE_NGINX=1) fails loudly; anywhere else the suite says
 * "SKIPPED: no nginx" in capitals, never silently.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const NGINX = process.env['CDP_EDGE_NGINX'] ?? (spawnSync('nginx', ['-v']).error ? '/usr/sbin/nginx' : 'nginx');

/** True when nginx runs here. Throws when it does not and CI requires it; otherwise prints a loud SKIPPED line. */
export function nginxAvailable(suite: string): boolean {
  const probe = spawnSync(NGINX, ['-v'], { encoding: 'utf8' });
  if (probe.status === 0) return true;
  const why = `no ${NGINX} on this machine (install the Debian package "nginx")`;
  if (process.env['CDP_EDGE_REQUIRE_NGINX'] === '1') throw new Error(`${suite}: ${why}, and CDP_EDGE_REQUIRE_NGINX=1 requires it`);
  const line = `SKIPPED: no nginx — ${suite} did not run: ${why}`;
  console.warn(`\n${'!'.repeat(line.length)}\n${line}\n${'!'.repeat(line.length)}\n`);
  return false;
}

export interface RunningNginx {
  close(): Promise<void>;
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/** Starts nginx with `servers` inside its `http { }` block; resolves once `port` (one of theirs) accepts connections. */
export async function startNginx(servers: string, port: number): Promise<RunningNginx> {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-nginx-'));
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;
master_process off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
${servers}
}
`,
  );
  const child: ChildProcess = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], { stdio: 'ignore' });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const log = () => {
    try {
      return readFileSync(join(dir, 'error.log'), 'utf8');
    } catch {
      return '';
    }
  };
  const deadline = Date.now() + 10_000;
  while (!(await listening(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`nginx did not start on ${port}:\n${log()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    async close() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
