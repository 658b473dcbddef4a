/**
 * How far V8 lets the relay's old generation grow past what survived its last major GC.
 *
 * By default V8 picks a growing factor between 1.1 and 4 from the machine's memory and how fast
 * it collects: on a machine with a few GB it lets the old generation reach about 4× its live
 * size before the next major GC. Under load the relay promotes a few MB a second (leased entries
 * and requests that outlive two scavenges, then garbage), so its old space filled with 25–40 MB
 * of garbage over a live heap of about 15 MB, and RSS followed it. With the factor at
 * {@link HEAP_GROWING_PERCENT} the limit is the live heap plus V8's minimum step (8 MB): major
 * GCs come more often, each marking the same small live heap (bench/README, "The relay's memory
 * under load", has the figures and the CPU measured beside them).
 *
 * The flag is the process's, and V8 reads it at each major GC: the limit set by the GCs of
 * start-up (at 4×) would stand until the old generation reached it, so one full GC is run once
 * it is set. A `--heap-growing-percent` given on the process's command line is left as it is
 * (Node refuses the flag in NODE_OPTIONS). Only the CLI sets it (`startRelay({ boundHeapGrowth })`):
 * the flag is the whole process's, and an embedding server's heap is its own business.
 * @module
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** The old generation may reach 1.5× what survived the last major GC (or that plus 8 MB). */
export const HEAP_GROWING_PERCENT = 50;

const FLAG = /^--heap[-_]growing[-_]percent(=|$)/;

/** Whether the process was started with its own `--heap-growing-percent` (on its command line: Node refuses it in NODE_OPTIONS). */
export function heapGrowthGiven(execArgv: readonly string[] = process.execArgv): boolean {
  return execArgv.some((arg) => FLAG.test(arg));
}

let bounded = false;

/** Whether {@link boundHeapGrowth} set the flag in this process. */
export const heapGrowthBounded = (): boolean => bounded;

/**
 * Sets the process's heap growing factor to {@link HEAP_GROWING_PERCENT} and collects once so
 * the limit it gives applies from now on; once a process, and not when the process was given
 * its own. Returns whether it set it.
 */
export function boundHeapGrowth(): boolean {
  if (bounded || heapGrowthGiven()) return false;
  bounded = true;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  // V8 recomputes the limit at a major GC: run one now. `gc` reached through a new context, then
  // taken away again so no later context or script sees it.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  setFlagsFromString('--no-expose-gc');
  gc();
  return true;
}
