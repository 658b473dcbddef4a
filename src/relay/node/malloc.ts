/**
 * What keeps the process's malloc from holding freed memory: glibc's dynamic mmap threshold.
 *
 * glibc serves an allocation above its mmap threshold (128 KiB at start) with a mapping of its
 * own. Freeing such a mapping raises the threshold to its size and the trim threshold to twice
 * that, for the rest of the process: from then on every malloc arena (the main thread's and one
 * per busy thread: V8's workers, libuv's, libsql's) keeps up to that much free memory resident
 * instead of giving it back. Under load the relay's arenas held 16–20 MB against 5–9 MB with the
 * threshold left low, and its RSS 150–159 MB against 140–146 at batches of 100 (bench/README.md,
 * "The relay's memory under load").
 *
 * Two kinds of freed mapping set it in the relay: its own buffers over 128 KiB (the accept's blob
 * is cut into runs below that, sql-accept.ts), and V8's recompiling of undici's HTTP parser, a
 * WebAssembly module, with TurboFan once it is hot: one compile zone of 2.2 MB, freed, set the
 * trim threshold to 4.5 MB. Its baseline code (Liftoff) parses the platform's answers, a small
 * part of a call's cost. What remains is Node's own report at libsql's load (about 450 KiB once).
 *
 * The flag is the process's, so, as the heap's bound (heap.ts), only the CLI sets it, before the
 * first platform call compiles the parser; a process given its own Liftoff or tiering flag keeps it.
 * @module
 */
import { setFlagsFromString } from 'node:v8';

const FLAG = /^--(no-)?(liftoff|wasm[-_]tier[-_]up|wasm[-_]dynamic[-_]tiering)([-_]only)?(=|$)/;

/** Whether the process was started with its own Liftoff or wasm tiering flag. */
export function wasmTieringGiven(execArgv: readonly string[] = process.execArgv): boolean {
  return execArgv.some((arg) => FLAG.test(arg));
}

let kept = false;

/** Whether {@link keepWasmOnLiftoff} set the flag in this process. */
export const wasmKeptOnLiftoff = (): boolean => kept;

/**
 * WebAssembly stays on V8's baseline compiler (`--liftoff-only`) from now on: a module compiled
 * later is never recompiled with TurboFan. Once a process, and not when the process was given
 * its own flag. Returns whether it set it.
 */
export function keepWasmOnLiftoff(): boolean {
  if (kept || wasmTieringGiven()) return false;
  kept = true;
  setFlagsFromString('--liftoff-only');
  return true;
}
