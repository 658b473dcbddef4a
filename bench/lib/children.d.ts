import type { ChildProcess } from 'node:child_process';

export interface Child {
  port: number;
  child: ChildProcess;
  /** microseconds of CPU (user + system) the child has used so far */
  cpu(): Promise<number>;
  /** the child's resident set size now, in bytes */
  rss(): Promise<number>;
  /** how many calls the child (a platform role) has taken so far; 0 for roles that do not count */
  calls(): Promise<number>;
  /** how many items (activities) the child (a platform role) has taken so far; 0 for roles that do not count */
  items(): Promise<number>;
}

/** In the child: starts the server, reports its port, answers CPU questions, ends with the parent; `calls` counts what a platform role took. */
export declare function serveRole(start: () => Promise<number>, calls?: () => number, items?: () => number): Promise<void>;

/** In the parent: forks `file` with `args` (with tsx's loader unless `plain`); resolves once the child listens. */
export declare function spawnRole(file: string, args: string[], options?: { plain?: boolean; nodeArgs?: string[] }): Promise<Child>;
