/**
 * The Node relay as users install it: `npm pack` of this checkout (the built dist/), installed
 * into an empty folder from the tarball, then `npx cdp-edge relay` from there on Node 22, pointed
 * at the emulator over real HTTP.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { type Child, collectOne, deliveredCount, KEY, node22, pathWith, root, SITES, start, upstream } from './support.js';

const node = node22('the packed package (test/deploy/pack.test.ts)');

describe.runIf(node)('npx cdp-edge relay, installed from the packed tarball', () => {
  let emulator: RunningEmulator;
  let relay: Child;
  let url: string;
  let dir: string;

  beforeAll(async () => {
    emulator = await upstream();
    dir = mkdtempSync(join(tmpdir(), 'cdp-deploy-pack-'));
    const npm = (args: string[], cwd: string) =>
      execFileSync('npm', args, { cwd, encoding: 'utf8', timeout: 180_000, env: { ...process.env, PATH: pathWith(node!) } });
    // The tarball as published: what `files` lists, built by `npm test`'s pretest.
    const [packed] = JSON.parse(npm(['pack', '--json', '--ignore-scripts', '--pack-destination', dir], root)) as [{ filename: string }];
    const app = join(dir, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'relay-user', private: true }));
    npm(['install', '--no-audit', '--no-fund', '--prefer-offline', join(dir, packed.filename)], app);
    relay = start('npx', ['cdp-edge', 'relay', '--port', '0'], {
      cwd: app,
      env: { PATH: pathWith(node!), HOME: process.env['HOME'] ?? app, CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, RELAY_SITES: SITES, RELAY_LOG: 'off' },
    });
    url = (await relay.waitFor(/listening on (http:\/\/\S+?)[\s(]/, 60_000))[1]!;
  }, 240_000);
  afterAll(async () => {
    await relay?.stop();
    await emulator?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answers a /collect accepted, and the item reaches the upstream once', async () => {
    const email = 'packed-relay@example.com';
    expect(await collectOne(url, email)).toBe('accepted');
    expect(await deliveredCount(emulator, url, email)).toBe(1);
  }, 90_000);
});
