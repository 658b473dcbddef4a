/**
 * The servers of the Next.js end-to-end test, as a site runs them: `next build` and `next start`
 * of demo/next, and nginx in front (the load balancer every production Next server has), which
 * appends the visitor's address to `X-Forwarded-For`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { type RunningNginx, startNginx } from '../support/nginx.js';
import { root } from '../support/built.js';

export const DEMO = join(root, 'demo', 'next');
const NEXT_BIN = join(root, 'node_modules', 'next', 'dist', 'bin', 'next');

export { nginxAvailable } from '../support/nginx.js';

/** A port free on `host` now. */
export function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface Proc {
  child: ChildProcess;
  output(): string;
  /** resolves once `pattern` is in the output; rejects if the process ends first */
  waitFor(pattern: RegExp, ms: number): Promise<void>;
  /** resolves with the exit code */
  exit: Promise<number | null>;
  stop(): Promise<void>;
}

function run(command: string, args: string[], options: { cwd: string; env?: Record<string, string> }): Proc {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (chunk: Buffer) => {
    out += chunk;
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => out,
    exit,
    waitFor: (pattern, ms) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${command} ${args.join(' ')}: no ${pattern} within ${ms} ms:\n${out}`)), ms);
        const check = () => {
          if (!pattern.test(out)) return;
          clearTimeout(timer);
          resolve();
        };
        child.stdout!.on('data', check);
        child.stderr!.on('data', check);
        void exit.then((code) => {
          clearTimeout(timer);
          reject(new Error(`${command} ${args.join(' ')} ended (${code}) before ${pattern}:\n${out}`));
        });
        check();
      }),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exit;
    },
  };
}

/** `next build` of demo/next under `nice -n 10` (the build is the slow part: its time is printed). */
export async function nextBuild(env: Record<string, string>): Promise<number> {
  const began = Date.now();
  const build = run('nice', ['-n', '10', process.execPath, NEXT_BIN, 'build'], { cwd: DEMO, env });
  const code = await build.exit;
  if (code !== 0) throw new Error(`next build failed (${code}):\n${build.output()}`);
  const seconds = (Date.now() - began) / 1000;
  console.log(`next build of demo/next took ${seconds.toFixed(1)} s`);
  return seconds;
}

/** `next start` of the built demo on `127.0.0.1:port`. */
export async function nextStart(port: number, env: Record<string, string>): Promise<Proc> {
  const server = run(process.execPath, [NEXT_BIN, 'start', '-H', '127.0.0.1', '-p', String(port)], { cwd: DEMO, env });
  await server.waitFor(/Ready in/, 60_000);
  return server;
}

/**
 * nginx on `port` of `[::1]` (where the browser visits) and `127.0.0.1`, in front of `upstream`,
 * appending the address its client connected from to X-Forwarded-For.
 */
export const nginxFront = (port: number, upstream: string): Promise<RunningNginx> =>
  startNginx(
    `server {
    listen [::1]:${port};
    listen 127.0.0.1:${port};
    location / {
      proxy_pass ${upstream};
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
    }
  }`,
    port,
  );
