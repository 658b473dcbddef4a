/**
 * Server roles of a benchmark in child processes on loopback: the bench forks its own file with
 * a role name, the child starts that server and reports its port, then answers CPU-time
 * questions over IPC (so a bench can give CPU per request of the process under test).
 */
import { fork, type ChildProcess } from 'node:child_process';

export interface Child {
  port: number;
  child: ChildProcess;
  /** microseconds of CPU (user + system) the child has used so far */
  cpu(): Promise<number>;
  /** the child's resident set size now, in bytes */
  rss(): Promise<number>;
}

/** In the child: starts the server, reports its port, answers CPU questions, ends with the parent. */
export async function serveRole(start: () => Promise<number>): Promise<void> {
  process.send?.({ port: await start() });
  process.on('message', () => {
    const { user, system } = process.cpuUsage();
    process.send?.({ cpu: user + system, rss: process.memoryUsage.rss() });
  });
  process.on('disconnect', () => process.exit(0));
}

/** In the parent: forks `file` with `args` (tsx's loader is inherited through execArgv); resolves once the child listens. */
export function spawnRole(file: string, args: string[]): Promise<Child> {
  const child = fork(file, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const usage = () =>
    new Promise<{ cpu: number; rss: number }>((resolve) => {
      child.once('message', (message) => resolve(message as { cpu: number; rss: number }));
      child.send('usage');
    });
  const cpu = async () => (await usage()).cpu;
  const rss = async () => (await usage()).rss;
  return new Promise((resolve, reject) => {
    child.once('message', (message) => resolve({ port: (message as { port: number }).port, child, cpu, rss }));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`bench role ${args.join(' ')} exited with ${code} before listening`)));
  });
}
