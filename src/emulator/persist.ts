/**
 * Node only: the `--data` file. Loads a seed state, and writes changes back debounced and
 * atomically (a temporary file, then rename), so a crash never leaves half a file.
 * @module
 */
import { readFileSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import type { EmulatorSnapshot } from './snapshot.js';

/** The seed in `path`, or undefined when the file does not exist yet. Throws naming the file when it is not JSON. */
export function readDataFile(path: string): Partial<EmulatorSnapshot> | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return JSON.parse(text) as Partial<EmulatorSnapshot>;
  } catch (cause) {
    throw new SyntaxError(`${path} is not valid JSON (${(cause as Error).message}); fix or remove it`, { cause });
  }
}

export interface DataWriter {
  /** a write is due (called on every change) */
  schedule(): void;
  /** writes now if anything is pending; resolves when it is on disk */
  flush(): Promise<void>;
}

/** Writes `snapshot()` to `path` at most every `debounceMs`. */
export function createDataWriter(path: string, snapshot: () => EmulatorSnapshot, debounceMs = 250): DataWriter {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let pending = false;
  let writing: Promise<void> = Promise.resolve();
  let serial = 0;

  const write = () => {
    timer = undefined;
    if (!pending) return writing;
    pending = false;
    const temp = `${path}.${process.pid}.${++serial}.tmp`;
    const text = JSON.stringify(snapshot());
    // Each write starts after the one before has settled, failed or not: one failed write (a full
    // disk, a removed directory) is reported by its caller and never stops the writes after it.
    const previous = writing.catch(() => {});
    writing = previous.then(async () => {
      try {
        await writeFile(temp, text);
        await rename(temp, path);
      } catch (error) {
        await rm(temp, { force: true });
        // Pending again: the next change or flush retries with the then current state.
        pending = true;
        throw new Error(`could not write ${path}: ${(error as Error).message}`, { cause: error });
      }
    });
    return writing;
  };

  return {
    schedule() {
      pending = true;
      timer ??= setTimeout(() => void write().catch((error) => console.error(`cdp-edge emulator: ${(error as Error).message}`)), debounceMs);
    },
    async flush() {
      if (timer) clearTimeout(timer);
      await write();
    },
  };
}
