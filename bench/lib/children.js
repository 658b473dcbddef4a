/**
 * Server roles of a benchmark in child processes on loopback: the bench forks its own file with
 * a role name, the child starts that server and reports its port, then answers CPU-time
 * questions over IPC (so a bench can give CPU per request of the process under test).
 *
 * Plain JavaScript (types in children.d.ts), so that a role running on plain Node, without the
 * TypeScript loader (bench/lib/relay-role.mjs), shares it.
 */
import { fork } from 'node:child_process';

/**
 * In the child: starts the server, reports its port, answers CPU questions, ends with the parent.
 * `calls` and `items`, when given, say how many calls and items the server has taken so far (a platform role).
 */
export async function serveRole(start, calls = () => 0, items = () => 0) {
  process.send?.({ port: await start() });
  process.on('message', () => {
    const { user, system } = process.cpuUsage();
    process.send?.({ cpu: user + system, rss: process.memoryUsage.rss(), calls: calls(), items: items() });
  });
  process.on('disconnect', () => process.exit(0));
}

/**
 * In the parent: forks `file` with `args`; resolves once the child listens. The child inherits
 * tsx's loader through execArgv, unless `plain` (a .mjs role on plain Node, as users run the built code,
 * with `nodeArgs` only, e.g. `--cpu-prof`).
 */
export function spawnRole(file, args, { plain = false, nodeArgs = [] } = {}) {
  const child = fork(file, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], ...(plain ? { execArgv: nodeArgs } : {}) });
  const usage = () =>
    new Promise((resolve) => {
      child.once('message', (message) => resolve(message));
      child.send('usage');
    });
  const cpu = async () => (await usage()).cpu;
  const rss = async () => (await usage()).rss;
  const calls = async () => (await usage()).calls;
  const items = async () => (await usage()).items;
  return new Promise((resolve, reject) => {
    child.once('message', (message) => resolve({ port: message.port, child, cpu, rss, calls, items }));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`bench role ${args.join(' ')} exited with ${code} before listening`)));
  });
}
