/**
 * Node only: `startEmulator` serves the emulator on a port with @hono/node-server, with
 * the optional `--data` file (loaded at start, written back on changes and on close).
 * @module
 */
import { getRequestListener } from '@hono/node-server';
import { listen } from '../listen.js';
import { createEmulator, type Emulator } from './emulator.js';
import type { EmulatorOptions } from './options.js';
import { createDataWriter, readDataFile } from './persist.js';

export interface StartOptions extends EmulatorOptions {
  /** @default 8790; 0 picks a free port */
  port?: number;
  /** @default '127.0.0.1' */
  hostname?: string;
  /** a JSON file: loaded as the seed when it exists, written back after changes */
  data?: string;
  /** ms between a change and its write to `data` @default 250 */
  writeDebounceMs?: number;
}

export interface RunningEmulator {
  /** the base address, e.g. `http://127.0.0.1:8790` (no trailing slash) */
  url: string;
  port: number;
  emulator: Emulator;
  /** writes pending changes to `data`, then stops the server */
  close(): Promise<void>;
}

/** Starts the emulator on loopback; resolves once it listens. */
export async function startEmulator(options: StartOptions = {}): Promise<RunningEmulator> {
  const { port = 8790, hostname = '127.0.0.1', data, writeDebounceMs, ...emulatorOptions } = options;
  let onWrite = () => {};
  const seed = data ? (readDataFile(data) ?? emulatorOptions.seed) : emulatorOptions.seed;
  const emulator = createEmulator({
    ...emulatorOptions,
    ...(seed ? { seed } : {}),
    onChange: () => {
      emulatorOptions.onChange?.();
      onWrite();
    },
  });
  const writer = data ? createDataWriter(data, () => emulator.snapshot(), writeDebounceMs) : undefined;
  if (writer) onWrite = () => writer.schedule();

  const listening = await listen(getRequestListener(emulator.fetch), port, hostname);
  let closing: Promise<void> | undefined;
  return {
    url: listening.url,
    port: listening.port,
    emulator,
    close() {
      closing ??= (async () => {
        await listening.close();
        await writer?.flush();
      })();
      return closing;
    },
  };
}
