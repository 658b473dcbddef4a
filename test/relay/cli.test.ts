// `cdp-edge relay` as a user runs it: configured by the relay's environment variables, pointed at the
// emulator; a browser-origin batch lands as people and events with the visitor's address;
// SIGINT and SIGTERM close it with exit code 0; a bad variable or flag is named and exits 2.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { ensureBuilt, root } from '../support/built.js';
import { defaultSqliteDriver } from '../support/node-sqlite.js';

// The CLI as installed (bin/cdp-edge.js runs dist/): each process starts in a fraction of the time
// tsx takes to compile the sources again. The relay runs in a temporary directory, so name it by path.
const bin = join(root, 'bin', 'cdp-edge.js');
const KEY = 'cli-relay-platform-key';
const ORIGIN = 'https://shop.example.com';

let emulator: RunningEmulator;
beforeAll(ensureBuilt, 180_000);
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

/** The relays this file started: a case that fails midway leaves its relay (and its workers) running otherwise. */
const launched: ChildProcess[] = [];
afterEach(async () => {
  const alive = launched.splice(0).filter((child) => child.exitCode === null && child.signalCode === null);
  await Promise.all(
    alive.map(
      (child) =>
        new Promise<void>((resolve) => {
          // SIGTERM lets a primary stop its workers; SIGKILL if it has not exited 5 s on.
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
});

/** Polls `probe` until it gives a value (10 s at most); `seen` says what the last probe saw, for the error. */
async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, seen: () => string = () => ''): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`waited 10 s in vain${seen() ? `; last seen:\n${seen()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function launch(env: Record<string, string>, args: string[] = [], cwd = mkdtempSync(join(tmpdir(), 'cdp-relay-cli-'))) {
  // A free port unless the case gives its own (a flag, or PORT).
  const port = args.includes('--port') || 'PORT' in env ? [] : ['--port', '0'];
  const child = spawn(process.execPath, [bin, 'relay', ...port, ...args], {
    cwd,
    env: { PATH: process.env['PATH'] ?? '', RELAY_LOG: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  launched.push(child);
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
    const relay = launch({ CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, RELAY_SITES: JSON.stringify([{ key: 'pk_cli', origins: [ORIGIN], verify: 'off' }]) });
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

    // Accepted once durable; the relay's deliverer sends it right after.
    const peopleOf = () => [...emulator.emulator.state.people.values()].filter((person) => person.fields['str::email'] === 'cli@example.com');
    await expect.poll(() => peopleOf().flatMap((person) => person.events).length, { timeout: 10_000 }).toBe(1);
    const people = peopleOf();
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

  it('stops cleanly on a SIGTERM sent the moment it says it listens, every time', async () => {
    // Its stop was listened for only after that line: a signal right behind it found Node's
    // default and killed it undrained (3 of 5 tries before).
    for (let attempt = 0; attempt < 5; attempt++) {
      const relay = launch({ CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url });
      relay.child.stdout!.on('data', () => {
        if (/listening on/.test(relay.output()) && !relay.child.killed) relay.child.kill('SIGTERM');
      });
      expect(await relay.exit).toBe(0);
    }
  }, 60_000);

  it('names the variable at fault and exits 2 without starting', async () => {
    const relay = launch({ CDP_API_KEY: KEY, RELAY_SITES: '[{"key":"pk","origins":["not an origin"]}]' });
    await expect(relay.address).rejects.toThrow(/RELAY_SITES/);
    expect(await relay.exit).toBe(2);
    expect(relay.output()).not.toContain(KEY);
  }, 40_000);

  const site = JSON.stringify([{ key: 'pk_cli', origins: [ORIGIN], verify: 'open' }]);
  const send = async (url: string, batch: unknown[]) => {
    const response = await fetch(`${url}/collect`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain', connection: 'close' },
      body: JSON.stringify({ key: 'pk_cli', batch }),
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { results: { status: string }[] }).results.map((r) => r.status);
  };
  const trackOf = (email: string) => ({
    id: crypto.randomUUID(),
    type: 'track',
    ts: new Date().toISOString(),
    activity_id: 'act:cm:signed-up',
    person: { 'str::email': email },
  });
  const eventsOf = (email: string) =>
    [...emulator.emulator.state.people.values()].filter((person) => person.fields['str::email'] === email).flatMap((person) => person.events);

  it('keeps forwarded ids in an SQLite file by default, so a restarted relay answers duplicate', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'cdp-relay-cli-'));
    const item = trackOf('restart-cli@example.com');
    // The killed relay's lead lock runs out after 500 ms (5 s by default): the restarted one need not wait for it.
    const env = { CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, RELAY_SITES: site, RELAY_DELIVERY_LEAD_MS: '500' };
    const first = launch(env, [], cwd);
    expect(await send(await first.address, [item])).toEqual(['accepted']);
    // Through node:sqlite where this Node has it (without Node's warning that it is experimental), else libsql.
    expect(first.output()).toContain(`state: SQLite .cdp-edge/relay-state.db via ${defaultSqliteDriver} (`);
    expect(first.output()).not.toMatch(/Warning/);
    first.child.kill('SIGKILL');
    await first.exit;
    const second = launch(env, [], cwd);
    expect(await send(await second.address, [item])).toEqual(['duplicate']);
    // Whatever the killed relay had not delivered, the restarted one delivers from the same file: once.
    await expect.poll(() => eventsOf('restart-cli@example.com').length, { timeout: 10_000 }).toBe(1);
    second.child.kill('SIGTERM');
    expect(await second.exit).toBe(0);
  }, 60_000);

  it('--workers 3 runs three processes on one port that forward each item once between them', async () => {
    // One test client is one visitor sending 100 requests at once: lift its limit, the point here is dedupe.
    const busySite = JSON.stringify([{ key: 'pk_cli', origins: [ORIGIN], verify: 'open', visitor_rate_limit: { per_second: 1000, burst: 1000 } }]);
    const relay = launch({ CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, RELAY_SITES: busySite }, ['--workers', '3']);
    const url = await relay.address;
    expect(relay.output()).toContain('3 workers');
    const items = Array.from({ length: 20 }, (_, i) => trackOf(`workers-${i}@example.com`));
    // Every item sent five times at once on fresh connections, spread over the processes.
    const answers = await Promise.all(items.flatMap((item) => Array.from({ length: 5 }, () => send(url, [item]))));
    const accepted = answers.flat().filter((status) => status === 'accepted');
    expect(accepted).toHaveLength(20);
    await expect.poll(() => items.filter((_, i) => eventsOf(`workers-${i}@example.com`).length > 0).length, { timeout: 10_000 }).toBe(20);
    for (let i = 0; i < 20; i++) expect(eventsOf(`workers-${i}@example.com`)).toHaveLength(1);
    relay.child.kill('SIGTERM');
    expect(await relay.exit).toBe(0);
  }, 60_000);

  it('--workers 2 --metrics-port 0: the primary serves metrics and the status page summed over both workers', async () => {
    const busySite = JSON.stringify([
      { key: 'pk_cli', name: 'cli-shop', origins: [ORIGIN], verify: 'open', visitor_rate_limit: { per_second: 1000, burst: 1000 } },
    ]);
    const relay = launch({ CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, RELAY_SITES: busySite }, ['--workers', '2', '--metrics-port', '0']);
    const url = await relay.address;
    const metricsUrl = await waitFor(() => /metrics on (http:\/\/\S+)\/metrics/.exec(relay.output())?.[1]);
    // 30 requests on fresh connections, spread over the two processes; each has one good item and one malformed one.
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => send(url, [trackOf(`metrics-${i}@example.com`), { id: crypto.randomUUID(), type: 'track' }])),
    );
    expect(answers.flat().filter((status) => status === 'accepted')).toHaveLength(30);
    // A worker still starting (or busy) does not answer a scrape in time: wait for one where both did.
    let lastScrape = '';
    const scrape = await waitFor(
      async () => {
        lastScrape = await (await fetch(`${metricsUrl}/metrics`)).text();
        return lastScrape.includes('cdp_edge_metrics_workers_missing 0') ? lastScrape : undefined;
      },
      // which worker did not answer and why (the scrape's comment lines), and what the relay printed
      () =>
        [...lastScrape.split('\n').filter((line) => line.startsWith('# cdp-edge') || line.startsWith('cdp_edge_metrics_workers_missing')), relay.output()].join(
          '\n',
        ),
    );
    expect(scrape).toContain('cdp_edge_collect_requests_total{site="cli-shop",status="200"} 30');
    expect(scrape).toContain('cdp_edge_items_total{site="cli-shop",result="accepted"} 30');
    expect(scrape).toContain('cdp_edge_items_total{site="cli-shop",result="rejected",reason="invalid"} 30');
    // the workers report their status events to the primary once a second
    const status = await waitFor(async () => {
      const snapshot = (await (await fetch(`${metricsUrl}/status.json`)).json()) as { totals: { requests: number; items: number }; rejected: unknown[] };
      return snapshot.totals.requests === 30 ? snapshot : undefined;
    });
    expect(status.totals.items).toBe(60);
    expect(status.rejected).toHaveLength(30);
    relay.child.kill('SIGTERM');
    expect(await relay.exit).toBe(0);
  }, 60_000);

  it('--workers 2: a scrape while one worker is stopped answers within the bound, with its last figures, and names it', async () => {
    const busySite = JSON.stringify([{ key: 'pk_cli', name: 'slow-shop', origins: [ORIGIN], visitor_rate_limit: { per_second: 1000, burst: 1000 } }]);
    const relay = launch({ CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, RELAY_SITES: busySite }, ['--workers', '2', '--metrics-port', '0']);
    const url = await relay.address;
    const metricsUrl = await waitFor(() => /metrics on (http:\/\/\S+)\/metrics/.exec(relay.output())?.[1]);
    await Promise.all(Array.from({ length: 20 }, (_, i) => send(url, [trackOf(`slow-${i}@example.com`)])));
    const counted = 'cdp_edge_collect_requests_total{site="slow-shop",status="200"} 20';
    const scrape = async () => {
      const response = await fetch(`${metricsUrl}/metrics`);
      return { status: response.status, text: await response.text() };
    };
    await waitFor(async () => {
      const { text } = await scrape();
      return text.includes('cdp_edge_metrics_workers_missing 0') && text.includes(counted) ? true : undefined;
    });
    // One worker stops answering anything (as if stuck in a long task): SIGSTOP, no hook in the relay.
    const workers = execFileSync('pgrep', ['-P', String(relay.child.pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map(Number);
    expect(workers).toHaveLength(2);
    const slow = workers[0]!;
    process.kill(slow, 'SIGSTOP');
    try {
      const started = Date.now();
      const { status, text } = await scrape();
      const took = Date.now() - started;
      expect(status).toBe(200);
      // bounded: the 2 s wait for the workers, plus a loaded machine's slack
      expect(took).toBeLessThan(8_000);
      expect(text).toContain('cdp_edge_metrics_workers_missing 1');
      expect(text).toMatch(
        new RegExp(`^# cdp-edge: worker \\d+ \\(pid ${slow}\\) did not answer within 2000 ms; its figures here are from [\\d.]+ s ago$`, 'm'),
      );
      // the stopped worker's counts are its last answer: the sum does not drop
      expect(text).toContain(counted);
    } finally {
      process.kill(slow, 'SIGCONT');
    }
    await waitFor(async () => ((await scrape()).text.includes('cdp_edge_metrics_workers_missing 0') ? true : undefined));
    relay.child.kill('SIGTERM');
    expect(await relay.exit).toBe(0);
  }, 60_000);

  it('listens on PORT when --port is not given, takes an empty PORT as unset, and lets --port win', async () => {
    const free = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const fromVariable = launch({ CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, PORT: String(free) });
    expect(await fromVariable.address).toBe(`http://127.0.0.1:${free}`);
    fromVariable.child.kill('SIGTERM');
    expect(await fromVariable.exit).toBe(0);

    // An empty PORT (a container's `PORT=`) is the default port, not a random one. On an address of
    // its own, so that no other relay on 8787 is in the way: listening there, or refused as taken.
    const empty = launch({ CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, PORT: '' }, ['--host', '127.0.0.9']);
    empty.address.catch(() => {});
    await waitFor(async () => (/127\.0\.0\.9:8787/.test(empty.output()) ? true : undefined), empty.output);
    empty.child.kill('SIGTERM');
    await empty.exit;

    const flagWins = launch({ CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, PORT: 'not a port' }, ['--port', '0']);
    expect(await flagWins.address).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    flagWins.child.kill('SIGTERM');
    expect(await flagWins.exit).toBe(0);
  }, 40_000);

  it.each([
    [{ PORT: '99999' }, [], 'PORT: must be a port number (0–65535); got "99999"'],
    [{ PORT: '80.5' }, [], 'PORT: must be a port number (0–65535); got "80.5"'],
    [{}, ['--port', '0x50'], '--port: must be a port number (0–65535); got "0x50"'],
    [{}, ['--port', ''], '--port: must be a port number (0–65535); got ""'],
    [{ RELAY_METRICS_PORT: '1e3' }, [], 'RELAY_METRICS_PORT: must be a port number (0–65535); got "1e3"'],
    [{}, ['--metrics-port', '65536'], '--metrics-port: must be a port number (0–65535); got "65536"'],
  ])(
    'refuses a bad port (%j %j) with exit 2, naming where it came from',
    async (env, args, message) => {
      const relay = launch({ CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, ...env }, args);
      await expect(relay.address).rejects.toThrow('exited before listening');
      expect(await relay.exit).toBe(2);
      expect(relay.output()).toContain(`cdp-edge relay: ${message}`);
    },
    40_000,
  );

  it('names the state file and where it is set when it cannot be opened, and exits 1 without listening', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-relay-cli-state-'));
    const file = join(dir, 'a-file');
    writeFileSync(file, 'not a directory');
    for (const [env, args, path] of [
      [{ RELAY_STATE_FILE: dir }, [], dir],
      [{}, ['--state-file', join(file, 'state.db')], join(file, 'state.db')],
    ] as const) {
      const relay = launch({ CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, ...env }, [...args]);
      await expect(relay.address).rejects.toThrow('exited before listening');
      expect(await relay.exit).toBe(1);
      expect(relay.output()).toContain(
        `cdp-edge relay: could not start: the state file ${JSON.stringify(path)} (RELAY_STATE_FILE or --state-file) could not be opened: `,
      );
    }
  }, 40_000);

  it('refuses a bad --workers with exit 2', async () => {
    const relay = launch({ CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url }, ['--workers', 'many']);
    await expect(relay.address).rejects.toThrow(/--workers must be a whole number/);
    expect(await relay.exit).toBe(2);
  }, 40_000);
});
