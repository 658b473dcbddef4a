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
}

/** In the child: starts the server, reports its port, answers CPU questions, ends with the parent. */
export async function serveRole(start: () => Promise<number>): Promise<void> {
  process.send?.({ port: await start() });
  process.on('message', () => {
    const { user, system } = process.cpuUsage();
    process.send?.({ cpu: user + system });
  });
  process.on('disconnect', () => process.exit(0));
}

/** In the parent: forks `file` with `args` (tsx's loader is inherited through execArgv); resolves once the child listens. */
export function spawnRole(file: string, args: string[]): Promise<Child> {
  const child = fork(file, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const cpu = () =>
    new Promise<number>((resolve) => {
      child.once('message', (message) => resolve((message as { cpu: number }).cpu));
      child.send('cpu');
    });
  return new Promise((resolve, reject) => {
    child.once('message', (message) => resolve({ port: (message as { port: number }).port, child, cpu }));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`bench role ${args.join(' ')} exited with ${code} before listening`)));
  });
}
