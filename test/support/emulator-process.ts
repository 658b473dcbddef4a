/**
 * The emulator as `npx cdp-edge emulator` runs it (the built `bin/cdp-edge.js`), in a process of its
 * own: for tests that time the platform's side, whose clock must not wait on the test's event loop.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { CallCounts } from '../../src/emulator/calls.js';
import { ensureBuilt, root } from './built.js';

export interface EmulatorProcess {
  url: string;
  /** what each endpoint was called and answered so far (`GET /_emulator/calls`) */
  calls(): Promise<CallCounts>;
  close(): Promise<void>;
}

/** Starts `cdp-edge emulator --port 0 …args` (give `--key` among them); resolves once it listens. */
export async function startEmulatorProcess(args: string[]): Promise<EmulatorProcess> {
  ensureBuilt();
  const key = args[args.indexOf('--key') + 1];
  if (!args.includes('--key') || key === undefined) throw new Error('startEmulatorProcess needs --key');
  const child = spawn(process.execPath, [join(root, 'bin', 'cdp-edge.js'), 'emulator', '--port', '0', ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the emulator printed no address within 15 s: ${out}`)), 15_000);
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const printed = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (printed) {
        clearTimeout(timer);
        resolve(printed);
      }
    });
    child.stderr!.on('data', (chunk) => (out += chunk));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the emulator exited (${code}) before it listened: ${out}`));
    });
  }).catch((error: unknown) => {
    child.kill();
    throw error;
  });
  return {
    url,
    async calls() {
      const answer = await fetch(`${url}/_emulator/calls`, { headers: { 'x-api-key': key } });
      if (!answer.ok) throw new Error(`GET /_emulator/calls: ${answer.status}`);
      return ((await answer.json()) as { endpoints: CallCounts }).endpoints;
    },
    async close() {
      child.kill();
      await exited;
    },
  };
}
