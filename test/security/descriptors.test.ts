// Attack: exhaust the relay's file descriptors with idle connections (300 under `ulimit -n 256`).
// Before, new visitors got connection resets until the idle ones were reaped (17 of 20 /collect
// over 10 s). The relay now sheds idle connections, longest idle first, when it nears its
// descriptor limit, so a visitor with a request to make is served; and one address may hold only
// RELAY_MAX_CONNECTIONS_PER_ADDRESS connections at once.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { type RunningRelay, startRelay } from '../../src/relay/node.js';
import { goodTrack, KEY, ORIGIN, SITE } from './support.js';

const root = join(import.meta.dirname, '..', '..');
const tsx = pathToFileURL(join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const cli = join(root, 'test', 'relay', 'support', 'cli-main.ts');
const dir = mkdtempSync(join(tmpdir(), 'cdp-descriptors-'));
const SITES = JSON.stringify([{ key: SITE, origins: [ORIGIN], verify: 'off' }]);

let emulator: RunningEmulator;
const stops: (() => unknown)[] = [];
beforeAll(async () => {
  emulator = await startEmulator({ port: 0, key: KEY, plan: 'business' });
  await fetch(`${emulator.url}/v1/definitions/activity/create`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY },
    body: JSON.stringify({ name: 'signed-up', attributes: [{ name: 'plan', display_type: 'text' }] }),
  });
});
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await emulator?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One /collect on a connection of its own (a new visitor), from `localAddress`; its status, or the connection error's code. */
function visit(url: string, localAddress = '127.0.0.1'): Promise<number | string> {
  const { hostname, port } = new URL(url);
  const body = JSON.stringify({ key: SITE, batch: [goodTrack('visitor@example.com')] });
  return new Promise((resolve) => {
    const call = request(
      {
        host: hostname,
        port,
        path: '/collect',
        method: 'POST',
        agent: false,
        localAddress,
        headers: { 'content-type': 'text/plain', origin: ORIGIN, 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        response.resume();
        response.once('end', () => resolve(response.statusCode ?? 0));
      },
    );
    call.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    call.end(body);
  });
}

/** Holds `count` idle connections to `url` from `localAddress`, opening a new one whenever one is closed, until `stop`. */
function holdIdle(url: string, count: number, localAddress = '127.0.0.1') {
  const { hostname, port } = new URL(url);
  let stopped = false;
  let closed = 0;
  const sockets = new Set<Socket>();
  const open = () => {
    if (stopped) return;
    const socket = connect({ host: hostname, port: Number(port), localAddress });
    sockets.add(socket);
    socket.on('error', () => {});
    socket.once('close', () => {
      sockets.delete(socket);
      closed++;
      setTimeout(open, 5);
    });
  };
  for (let i = 0; i < count; i++) open();
  return {
    closed: () => closed,
    stop() {
      stopped = true;
      for (const socket of sockets) socket.destroy();
    },
  };
}

describe('descriptors', () => {
  it('300 idle connections under ulimit -n 256: /collect keeps answering, every time', async () => {
    const child = spawn('sh', ['-c', `ulimit -n 256; exec "${process.execPath}" --import "${tsx}" "${cli}" relay --port 0`], {
      cwd: dir,
      env: {
        PATH: process.env['PATH'] ?? '',
        CDP_API_KEY: KEY,
        CDP_BASE_URL: emulator.url,
        RELAY_SITES: SITES,
        RELAY_STATE_FILE: join(dir, 'state.db'),
        // the attacker's connections and the visitors come from loopback: a proxy, so not capped per address here
        RELAY_TRUST_PROXY: '127.0.0.1',
        RELAY_LOG: 'off',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    stops.push(() => child.kill('SIGKILL'));
    let out = '';
    const url = await new Promise<string>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        out += chunk;
        const found = /listening on (http:\/\/\S+?)[\s(]/.exec(out)?.[1];
        if (found) resolve(found);
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('exit', () => reject(new Error(`the relay exited: ${out}`)));
    });
    const idle = holdIdle(url, 300);
    stops.push(() => idle.stop());
    // The attack is on once the relay has had to close some of them (it cannot hold 300).
    for (const until = Date.now() + 20_000; idle.closed() === 0 && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(idle.closed()).toBeGreaterThan(0);
    const answers: (number | string)[] = [];
    for (let i = 0; i < 20; i++) answers.push(await visit(url));
    expect(answers).toEqual(Array(20).fill(200));
    idle.stop();
  }, 60_000);

  describe('a cap per address', () => {
    let relay: RunningRelay;
    beforeAll(async () => {
      relay = await startRelay({
        port: 0,
        env: {
          CDP_API_KEY: KEY,
          CDP_BASE_URL: emulator.url,
          RELAY_SITES: SITES,
          RELAY_STATE_FILE: ':memory:',
          RELAY_LOG: 'off',
          RELAY_MAX_CONNECTIONS_PER_ADDRESS: '10',
        },
      });
      stops.push(() => relay.close());
    });

    it('closes an address’s connections past RELAY_MAX_CONNECTIONS_PER_ADDRESS; another address is served', async () => {
      const idle = holdIdle(relay.url, 15, '127.0.0.3');
      stops.push(() => idle.stop());
      for (const until = Date.now() + 10_000; idle.closed() < 5 && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(idle.closed()).toBeGreaterThanOrEqual(5);
      expect(await visit(relay.url, '127.0.0.4')).toBe(200);
      // the capped address itself is refused while it holds its 10
      expect(await visit(relay.url, '127.0.0.3')).not.toBe(200);
      idle.stop();
    });
  });
});
