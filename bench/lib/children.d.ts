import type { ChildProcess } from 'node:child_process';

export interface Child {
  port: number;
  child: ChildProcess;
  /** microseconds of CPU (user + system) the child has used so far */
  cpu(): Promise<number>;
  /** the child's resident set size now, in bytes */
  rss(): Promise<number>;
}

/** In the child: starts the server, reports its port, answers CPU questions, ends with the parent. */
export declare function serveRole(start: () => Promise<number>): Promise<void>;

/** In the parent: forks `file` with `args` (with tsx's loader unless `plain`); resolves once the child listens. */
export declare function spawnRole(file: string, args: string[], options?: { plain?: boolean }): Promise<Child>;
