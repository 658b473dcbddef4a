/**
 * The built command line (`node bin/cdp-edge.js <command> …`, run `npm run build` first) as a
 * child process, exactly as a user starts it: its address (read from the line it prints once it
 * listens) and the CPU time it has used (from /proc, so no hook inside the process is needed).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../../bin/cdp-edge.js', import.meta.url));
const dist = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/** Clock ticks per second of /proc's CPU times (100 on Linux almost everywhere). */
const TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU ms (user + system, every thread) process `pid` has used so far; Linux only. */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // the command name in parentheses may hold spaces: count fields after its closing parenthesis
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
}

export interface CliProcess {
  /** the address it printed, e.g. `http://127.0.0.1:41234` */
  url: string;
  child: ChildProcess;
  /** CPU ms it has used so far */
  cpuMs(): number;
  /** SIGTERM, then SIGKILL after 5 s; resolves once it has exited */
  stop(): Promise<void>;
}

/**
 * Starts `cdp-edge <args>` with `env` added to this process's; resolves once it prints
 * `listening on <url>`. Its output after that is read and dropped (the relay logs a line per
 * request at the default level), so a full pipe never blocks it, unless BENCH_RELAY_STDOUT names
 * a file: the relay's output is appended there (e.g. V8's `--trace-opt --trace-deopt` lines, with
 * those flags in `nodeArgs`). `nodeArgs` go to node itself (e.g. `--cpu-prof`, which NODE_OPTIONS
 * does not take).
 */
export function startCli(args: string[], env: Record<string, string> = {}, timeoutMs = 30_000, nodeArgs: string[] = []): Promise<CliProcess> {
  if (!existsSync(dist)) throw new Error('the benches run the built CLI: run `npm run build` first');
  const child = spawn(process.execPath, [...nodeArgs, bin, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(killer);
  };
  return new Promise((resolve, reject) => {
    let out = '';
    let listening = false;
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`cdp-edge ${args[0]} printed no address within ${timeoutMs} ms: ${out.slice(-2000)}`));
    }, timeoutMs);
    const kept = args[0] === 'relay' && process.env['BENCH_RELAY_STDOUT'] ? createWriteStream(process.env['BENCH_RELAY_STDOUT'], { flags: 'a' }) : undefined;
    if (kept) child.once('exit', () => kept.end());
    child.stdout.on('data', (chunk: Buffer) => {
      kept?.write(chunk);
      if (listening) return;
      out += chunk.toString();
      const url = /listening on (http:\/\/[^\s]+)/.exec(out)?.[1];
      if (!url) return;
      listening = true;
      clearTimeout(timer);
      resolve({ url, child, cpuMs: () => processCpuMs(child.pid!), stop });
    });
    child.stderr.on('data', (chunk: Buffer) => {
      // after the start, trouble still shows: the bench's output is where a failing relay says why
      if (listening) process.stderr.write(`[cdp-edge ${args[0]}] ${chunk}`);
      else out += chunk.toString();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (!listening) reject(new Error(`cdp-edge ${args[0]} exited with ${code} before listening: ${out.slice(-2000)}`));
    });
  });
}
