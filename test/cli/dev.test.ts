// `cdp-edge dev` (what `npm start` runs) as a user runs it, from the built package: three
// addresses printed and working, Ctrl-C and SIGTERM stop everything with exit 0, flags checked
// by name, a taken port reported, and `--upstream` / CDP_API_KEY pointing the relay elsewhere.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseUrlFor } from '../../src/api/index.js';
import { startPlatformStub, type PlatformStub } from '../fixtures/platform-stub.js';

const root = join(import.meta.dirname, '..', '..');
const bin = join(root, 'bin', 'cdp-edge.js');
const ZERO = ['--demo-port', '0', '--relay-port', '0', '--emulator-port', '0'];

interface Run {
  /** everything printed so far, stdout and stderr */
  output(): string;
  /** resolves with the exit code */
  exit: Promise<number | null>;
  signal(name: NodeJS.Signals): void;
  /** resolves once "Press Ctrl-C" is printed, or rejects when it exits first */
  ready: Promise<{ demo: string; relay: string; emulator?: string; token: string }>;
}

/** Spawns `node bin/cdp-edge.js dev …` with an environment free of platform keys plus `env`. */
function dev(args: string[], env: Record<string, string> = {}): Run {
  const child = spawn(process.execPath, [bin, 'dev', ...args], {
    cwd: root,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  child.stderr.on('data', (chunk) => (out += chunk));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = new Promise<{ demo: string; relay: string; emulator?: string; token: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready after 30 s:\n${out}`)), 30_000);
    child.stdout.on('data', () => {
      if (!out.includes('Press Ctrl-C')) return;
      clearTimeout(timer);
      const find = (re: RegExp) => re.exec(out)?.[1];
      const emulator = find(/Emulator\s+(http:\/\/\S+?)\/?\s/);
      resolve({
        demo: find(/Demo site\s+(http:\/\/\S+?)\/?\s/)!,
        relay: find(/Relay\s+(http:\/\/\S+?)\/?\s/)!,
        ...(emulator ? { emulator } : {}),
        token: find(/^\s+(rt_\S+)$/m)!,
      });
    });
    void exit.then(() => {
      clearTimeout(timer);
      reject(new Error(`exited before it was ready:\n${out}`));
    });
  });
  ready.catch(() => {}); // runs that are meant to fail are awaited through `exit`
  return { output: () => out, exit, signal: (name) => child.kill(name), ready };
}

const post = (url: string, body: unknown, token?: string) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });

describe('cdp-edge dev', () => {
  it('prints three working addresses and what to click; Ctrl-C stops all three with exit 0', async () => {
    const run = dev(ZERO);
    const { demo, relay, emulator, token } = await run.ready;
    expect(run.output()).toContain('What to click');
    expect(run.output()).toContain('no key, nothing leaves it');

    const dashboard = await fetch(`${emulator}/`);
    expect(dashboard.status).toBe(200);
    expect(await dashboard.text()).toContain('ada@example.com'); // the seed
    expect(await (await fetch(`${relay}/healthz`)).json()).toMatchObject({ ok: true });
    const snippet = await fetch(`${relay}/cdp.js`);
    expect(snippet.status).toBe(200);
    expect(snippet.headers.get('content-type')).toContain('javascript');
    const page = await (await fetch(`${demo}/`)).text();
    expect(page).toContain(`<script async src="${relay}/cdp.js"></script>`);
    expect(page).toContain("key:'pk_demo'");

    // The printed token reads through the proxy, and only reads.
    const people = await post(`${relay}/v1/person/get`, { limit: 5, fields: ['str::email'] }, token);
    expect(people.status).toBe(200);
    expect(((await people.json()) as { contacts: Array<{ fields: Record<string, string> }> }).contacts.map((p) => p.fields['str::email'])).toContain(
      'grace@example.com',
    );
    expect((await post(`${relay}/v1/person/merge`, { people: [{ fields: { 'str::email': 'x@example.com' } }] }, token)).status).toBe(403);
    // The demo server signs emails the way the relay checks them.
    const signed = await post(`${demo}/api/user-hash`, { email: ' Ann@Example.COM ' });
    expect(await signed.json()).toMatchObject({ email: 'ann@example.com', user_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect((await post(`${demo}/api/user-hash`, { email: 'not an email' })).status).toBe(400);

    run.signal('SIGINT');
    expect(await run.exit).toBe(0);
    expect(run.output()).toContain('stopped');
    for (const url of [`${emulator}/`, `${relay}/healthz`, `${demo}/`]) await expect(fetch(url)).rejects.toThrow();
  });

  it('SIGTERM stops it with exit 0 too', async () => {
    const run = dev([...ZERO, '--quiet']);
    await run.ready;
    run.signal('SIGTERM');
    expect(await run.exit).toBe(0);
  });

  describe('a port given by flag that is taken', () => {
    let blocker: Server;
    let port: number;
    beforeAll(async () => {
      blocker = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      port = (blocker.address() as { port: number }).port;
    });
    afterAll(() => new Promise<void>((resolve) => blocker.close(() => resolve())));

    for (const flag of ['--relay-port', '--demo-port', '--emulator-port']) {
      it(`${flag}: says which flag and port, exits 2, and leaves nothing running`, async () => {
        const args = ZERO.flatMap((arg, i) => (ZERO[i - 1] === flag ? [String(port)] : [arg]));
        const run = dev(args);
        expect(await run.exit).toBe(2);
        expect(run.output()).toContain(`${flag} ${port} is already in use`);
        expect(run.output()).not.toContain('Press Ctrl-C');
      });
    }
  });

  it('checks its flags by name', async () => {
    const cases: Array<[string[], string]> = [
      [['--demo-port', 'abc'], '--demo-port must be a port number'],
      [['--relay-port', '70000'], '--relay-port must be a port number'],
      [['--emulator-port', '-1'], '--emulator-port'],
      [['--colour'], "Unknown option '--colour'"],
      [['--upstream', 'not a url'], '--upstream must be'],
      [['--upstream', 'https://api.example.com'], 'CDP_API_KEY'],
    ];
    for (const [args, message] of cases) {
      const run = dev(args);
      expect(await run.exit, args.join(' ')).toBe(2);
      expect(run.output()).toContain(message);
    }
    const help = dev(['--help']);
    expect(await help.exit).toBe(0);
    expect(help.output()).toContain('--upstream URL');
  });

  describe('pointed at another upstream', () => {
    let stub: PlatformStub;
    beforeAll(async () => {
      stub = await startPlatformStub(() => ({ body: { contacts: [], meta: {} } }));
    });
    afterAll(() => stub.close());

    it('--upstream: says so, starts no emulator, and the relay forwards there with CDP_API_KEY', async () => {
      const run = dev(['--upstream', `${stub.url}/`, '--relay-port', '0', '--demo-port', '0'], { CDP_API_KEY: 'real-platform-key' });
      const { relay, emulator, token } = await run.ready;
      expect(run.output()).toContain(`forwards to the REAL platform at ${stub.url} (because of --upstream)`);
      expect(emulator).toBeUndefined();
      expect(run.output()).not.toContain('dev-key');
      expect((await post(`${relay}/v1/person/get`, { limit: 1 }, token)).status).toBe(200);
      const call = stub.received.find((r) => r.path === '/v1/person/get');
      expect(call?.headers['x-api-key']).toBe('real-platform-key');
      expect(call?.headers['authorization']).toBeUndefined();
      run.signal('SIGINT');
      expect(await run.exit).toBe(0);
    });

    it("CDP_API_KEY and CDP_REGION in the environment: the region's address, said clearly", async () => {
      const run = dev(['--relay-port', '0', '--demo-port', '0', '--quiet'], { CDP_API_KEY: 'k', CDP_REGION: 'eu' });
      await run.ready;
      expect(run.output()).toContain(`REAL platform at ${baseUrlFor('eu')} (because of CDP_API_KEY and CDP_REGION=eu in the environment)`);
      run.signal('SIGINT');
      expect(await run.exit).toBe(0);
    });
  });
});
