/**
 * Real proxies for the routing tests, from Debian's packages: nginx as one process (no master, no
 * user switch) with its own temporary prefix, serving the `server { … }` blocks a test gives, and
 * Caddy with its admin endpoint and automatic HTTPS off, serving one site block, both on loopback.
 * When one is missing, CI (CDP_EDGE_REQUIRE_NGINX=1, CDP_EDGE_REQUIRE_CADDY=1) fails loudly;
 * anywhere else the suite says "SKIPPED: no nginx" (or caddy) in capitals, never silently.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const NGINX = process.env['CDP_EDGE_NGINX'] ?? (spawnSync('nginx', ['-v']).error ? '/usr/sbin/nginx' : 'nginx');
export const CADDY = process.env['CDP_EDGE_CADDY'] ?? 'caddy';

/** True when `program` runs here. Throws when it does not and CI requires it; otherwise prints a loud SKIPPED line. */
function available(program: string, versionFlag: string, name: string, suite: string): boolean {
  if (spawnSync(program, [versionFlag], { encoding: 'utf8' }).status === 0) return true;
  const why = `no ${program} on this machine (install the Debian package "${name}")`;
  const required = `CDP_EDGE_REQUIRE_${name.toUpperCase()}`;
  if (process.env[required] === '1') throw new Error(`${suite}: ${why}, and ${required}=1 requires it`);
  const line = `SKIPPED: no ${name} — ${suite} did not run: ${why}`;
  console.warn(`\n${'!'.repeat(line.length)}\n${line}\n${'!'.repeat(line.length)}\n`);
  return false;
}

export const nginxAvailable = (suite: string) => available(NGINX, '-v', 'nginx', suite);
export const caddyAvailable = (suite: string) => available(CADDY, 'version', 'caddy', suite);

/** A running proxy started here, nginx or Caddy. */
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
  return run(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], dir, port, () => read(join(dir, 'error.log')));
}

/** Starts Caddy with `site` (a site block) and no admin endpoint; resolves once `port` (the site's) accepts connections. */
export async function startCaddy(site: string, port: number): Promise<RunningNginx> {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-caddy-'));
  writeFileSync(join(dir, 'Caddyfile'), `{\n\tadmin off\n\tauto_https off\n}\n\n${site}\n`);
  let output = '';
  const proxy = await run(
    CADDY,
    ['run', '--adapter', 'caddyfile', '--config', join(dir, 'Caddyfile')],
    dir,
    port,
    () => output,
    {
      HOME: dir,
      XDG_DATA_HOME: join(dir, 'data'),
      XDG_CONFIG_HOME: join(dir, 'config'),
    },
    (chunk) => {
      output += chunk;
    },
  );
  return proxy;
}

const read = (path: string) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
};

async function run(
  program: string,
  args: string[],
  dir: string,
  port: number,
  log: () => string,
  env: Record<string, string> = {},
  onOutput?: (chunk: string) => void,
): Promise<RunningNginx> {
  const child: ChildProcess = spawn(program, args, {
    stdio: ['ignore', onOutput ? 'pipe' : 'ignore', onOutput ? 'pipe' : 'ignore'],
    env: { PATH: process.env['PATH'] ?? '', ...env },
  });
  child.stdout?.on('data', (chunk) => onOutput?.(String(chunk)));
  child.stderr?.on('data', (chunk) => onOutput?.(String(chunk)));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const deadline = Date.now() + 10_000;
  while (!(await listening(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${program} did not start on ${port}:\n${log()}`);
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
