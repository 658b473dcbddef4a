// `cdp-edge relay` as a user runs it: configured by Contract 3's environment, pointed at the
// emulator; a browser-origin batch lands as people and events with the visitor's address;
// SIGINT and SIGTERM close it with exit code 0; a bad variable is named and exits 2.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';

const root = join(import.meta.dirname, '..', '..');
const entry = join(root, 'test', 'relay', 'support', 'cli-main.ts');
// tsx runs the TypeScript CLI from source; the relay runs in a temporary directory, so name it by path.
const tsx = pathToFileURL(join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const KEY = 'cli-relay-platform-key';
const ORIGIN = 'https://shop.example.com';

let emulator: RunningEmulator;
beforeAll(async () => {
  emulator = await startEmulator({ port: 0, key: KEY });
  const response = await fetch(`${emulator.url}/v1/definitions/activity/create`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'signed-up' }),
  });
  expect(response.status).toBe(200);
});
afterAll(() => emulator?.close());

function launch(env: Record<string, string>, args: string[] = []) {
  const child = spawn(process.execPath, ['--import', tsx, entry, 'relay', '--port', '0', ...args], {
    cwd: mkdtempSync(join(tmpdir(), 'cdp-relay-cli-')),
    env: { PATH: process.env['PATH'] ?? '', RELAY_LOG: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (out += chunk));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const address = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no address printed: ${out}`)), 20_000);
    child.stdout!.on('data', () => {
      const url = /listening on (http:\/\/\S+?)[\s(]/.exec(out)?.[1];
      if (url) {
        clearTimeout(timer);
        resolve(url);
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      reject(new Error(`exited before listening: ${out}`));
    });
  });
  return { child: child as ChildProcess, address, exit, output: () => out };
}

describe('cdp-edge relay', () => {
  it('forwards a browser batch to the emulator, where people and events appear with the visitor address; SIGINT exits 0', async () => {
    const relay = launch({ CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, RELAY_SITES: JSON.stringify([{ key: 'pk_cli', origins: [ORIGIN] }]) });
    const url = await relay.address;
    const batch = [
      { id: crypto.randomUUID(), type: 'identify', ts: new Date().toISOString(), fields: { 'str::email': 'cli@example.com', 'str::first': 'Cleo' } },
      { id: crypto.randomUUID(), type: 'track', ts: new Date().toISOString(), activity_id: 'act:cm:signed-up', person: { 'str::email': 'cli@example.com' } },
    ];
    const response = await fetch(`${url}/collect`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain' },
      body: JSON.stringify({ key: 'pk_cli', batch }),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { results: { status: string }[] }).results.map((r) => r.status)).toEqual(['accepted', 'accepted']);

    const people = [...emulator.emulator.state.people.values()].filter((person) => person.fields['str::email'] === 'cli@example.com');
    expect(people).toHaveLength(1);
    expect(people[0]!.fields['str::first']).toBe('Cleo');
    expect(people[0]!.location?.ip?.address).toBe('127.0.0.1');
    expect(people[0]!.events.map((event) => event.activity_id)).toEqual(['act:cm:signed-up']);

    relay.child.kill('SIGINT');
    expect(await relay.exit).toBe(0);
  }, 40_000);

  it('closes cleanly on SIGTERM too', async () => {
    const relay = launch({ CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url });
    const url = await relay.address;
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    relay.child.kill('SIGTERM');
    expect(await relay.exit).toBe(0);
  }, 40_000);

  it('names the variable at fault and exits 2 without starting', async () => {
    const relay = launch({ CDP_API_KEY: KEY, RELAY_SITES: '[{"key":"pk","origins":["not an origin"]}]' });
    await expect(relay.address).rejects.toThrow(/RELAY_SITES/);
    expect(await relay.exit).toBe(2);
    expect(relay.output()).not.toContain(KEY);
  }, 40_000);
});
