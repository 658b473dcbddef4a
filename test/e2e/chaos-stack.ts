/**
 * The chaos rig: the real emulator (faults on demand), the real relay as `cdp-edge relay` in its
 * own process with a state file (so it can be SIGKILLed and restarted on the same port), and a
 * page server on another loopback origin serving dist/cdp.js with the inline stub. Events are
 * counted at the emulator. Shared by test/e2e/chaos.test.ts (short) and bench/chaos.ts (full).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmulator, type RunningEmulator } from '../../src/emulator/node.js';
import type { FaultedCall, FaultSpec } from '../../src/emulator/options.js';
import type { DeadLetter } from '../../src/relay/state/outbox.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';

export const SITE_KEY = 'pk_chaos';
const PLATFORM_KEY = 'chaos-platform-key';
/** The emulator takes 50 events per activity per person a day: each scenario spreads its events. */
export const PER_ACTIVITY = 45;
export const activityOf = (n: number) => `act:cm:chaos-${Math.floor(n / PER_ACTIVITY)}`;

const root = fileURLToPath(new URL('../../', import.meta.url));

export interface ChaosStack {
  emulator: RunningEmulator;
  /** the relay's base address; stays the same across restarts */
  relayUrl: string;
  site: string;
  pageUrl(init?: Record<string, unknown>): string;
  /** SIGKILL: no graceful close, whatever was in flight is cut */
  killRelay(): void;
  startRelay(): Promise<void>;
  /** makes the platform fail on purpose (the emulator's fault mode), one spec for `endpoints` (both by default); `undefined` heals it */
  setFaults(spec: (FaultSpec & { rate: number }) | undefined, endpoints?: readonly string[]): void;
  /** how many platform calls the fault mode has failed so far */
  readonly faultsInjected: number;
  /** `n` of every chaos event the emulator holds for `email`, duplicates included */
  received(email: string): string[];
  /** `n` of every chaos event of `email` the relay holds in its dead-letter list (reason `ambiguous`: its call's outcome is unknown) */
  held(email: string): Promise<string[]>;
  /** {@link held}, as the operator sees it: `cdp-edge outbox list --json` on the relay's state file */
  listed(email: string): Promise<string[]>;
  /** `n` of every chaos event of `email` an `activities/create` call carried when a fault struck it: applied before it failed, or not */
  faulted(email: string): { applied: string[]; unapplied: string[] };
  /** entries the relay's outbox still holds to send (leased ones, a call in flight, included); 0: nothing more leaves it */
  pending(): Promise<number>;
  /** everything the relay processes wrote (RELAY_LOG=debug: a line per request and per item) */
  relayOutput(): string;
  close(): Promise<void>;
}

/** An entry as the relay sends it to activities/create (and keeps it in a dead letter). */
type Event = Record<string, unknown>;

/** `n` of each chaos event of `email` among `events`. */
const eventsOf = (events: readonly Event[], email: string): string[] =>
  events
    .filter((event) => (event['fields'] as Record<string, unknown> | undefined)?.['str::email'] === email)
    .map((event) => String((event['attributes'] as Record<string, unknown> | undefined)?.['str:cm:n']));

/** `n` of each chaos event of `email` held as a dead letter of reason `ambiguous`. */
const heldOf = (letters: readonly DeadLetter[], email: string): string[] =>
  eventsOf(
    letters.filter((letter) => letter.reason === 'ambiguous').map((letter) => letter.entry),
    email,
  );

const listen = (server: Server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts everything; `events` is the most one person will send (sizes the activity definitions);
 * `relayEnv` adds to the relay's settings (the short form shortens its retry waits, the bench keeps the defaults).
 */
export async function startChaosStack(events: number, relayEnv: Record<string, string> = {}): Promise<ChaosStack> {
  // The fault mode draws one number per call; drawing below the rate is a fault. Counting them proves a scenario's fault hit.
  let rate = 0;
  let faultsInjected = 0;
  const random = () => {
    const draw = Math.random();
    if (draw < rate) faultsInjected++;
    return draw;
  };
  // What each activities/create call a fault struck carried: the events it holds back, or that the platform took unanswered.
  const struck: { applied: boolean; events: Event[] }[] = [];
  const onFault = (call: FaultedCall) => {
    if (call.endpoint !== 'activities/create') return;
    struck.push({ applied: call.applied, events: (JSON.parse(call.body) as { activities?: Record<string, unknown>[] }).activities ?? [] });
  };
  const emulator = await startEmulator({ port: 0, key: PLATFORM_KEY, plan: 'business', random, onFault });
  for (let i = 0; i <= Math.floor(events / PER_ACTIVITY); i++) {
    const created = await fetch(`${emulator.url}/v1/definitions/activity/create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': PLATFORM_KEY },
      body: JSON.stringify({ name: `chaos-${i}`, attributes: [{ name: 'n', display_type: 'text' }] }),
    });
    if (!created.ok) throw new Error(`seeding act:cm:chaos-${i}: ${created.status} ${await created.text()}`);
  }

  const snippet = readFileSync(join(root, 'dist/cdp.js'));
  let relayUrl = '';
  const pages = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/cdp.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(snippet);
    if (url.pathname !== '/') return void res.writeHead(404).end();
    const init = { relay: relayUrl, key: SITE_KEY, ...(JSON.parse(url.searchParams.get('init') ?? '{}') as object) };
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    // The script comes from the page's own server, so a page still loads while the relay is down.
    res.end(
      `<!doctype html><title>chaos</title><script>window.cdp=window.cdp||function(){(cdp.q=cdp.q||[]).push(arguments)};cdp('init',${JSON.stringify(init)});</script><script src="/cdp.js"></script>`,
    );
  });
  const site = `http://127.0.0.1:${await listen(pages)}`;

  const state = mkdtempSync(join(tmpdir(), 'cdp-edge-chaos-'));
  let port = 0;
  let child: ChildProcess | undefined;
  const env = {
    ...process.env,
    CDP_API_KEY: PLATFORM_KEY,
    CDP_BASE_URL: emulator.url,
    RELAY_BUDGET_MS: '1500',
    // A line per item too: the whole run's output is checked for keys, emails and hashes.
    RELAY_LOG: 'debug',
    RELAY_STATE_FILE: join(state, 'relay-state.db'),
    // Every tab and the load generator come from 127.0.0.1: one visitor, as far as limits go.
    RELAY_SITES: JSON.stringify([{ key: SITE_KEY, origins: [site], verify: 'open', visitor_rate_limit: { per_second: 10_000, burst: 10_000 } }]),
    ...relayEnv,
  };

  let relayOutput = '';
  async function startRelay(): Promise<void> {
    const started = spawn(process.execPath, [join(root, 'bin/cdp-edge.js'), 'relay', '--port', String(port)], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    let output = '';
    const address = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`cdp-edge relay did not start within 15 s: ${output}`)), 15_000);
      const read = (chunk: Buffer) => {
        output += chunk.toString();
        relayOutput += chunk.toString();
        const match = /listening on (http:\/\/[^\s]+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      };
      started.stdout!.on('data', read);
      started.stderr!.on('data', read);
      started.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`cdp-edge relay exited with ${code}: ${output}`));
      });
    });
    relayUrl = address;
    port = Number(new URL(address).port);
  }

  function killRelay(): void {
    child?.kill('SIGKILL');
    child = undefined;
  }

  await startRelay();
  return {
    emulator,
    get relayUrl() {
      return relayUrl;
    },
    site,
    pageUrl: (init = {}) => `${site}/?init=${encodeURIComponent(JSON.stringify(init))}`,
    killRelay,
    setFaults(spec, endpoints = ['activities/create', 'person/merge']) {
      rate = spec?.rate ?? 0;
      emulator.emulator.setFaults(spec ? Object.fromEntries(endpoints.map((endpoint) => [endpoint, spec])) : {});
    },
    get faultsInjected() {
      return faultsInjected;
    },
    async startRelay() {
      // The killed process's socket can take a moment to free the port.
      for (let attempt = 0; ; attempt++) {
        try {
          return await startRelay();
        } catch (error) {
          if (attempt >= 10) throw error;
          await sleep(200);
        }
      }
    },
    relayOutput: () => relayOutput,
    async pending() {
      const store = await createSqliteOutbox(join(state, 'relay-state.db'));
      try {
        return (await store.outbox.stats()).pending;
      } finally {
        await store.close();
      }
    },
    async held(email) {
      const store = await createSqliteOutbox(join(state, 'relay-state.db'));
      try {
        return heldOf(await store.outbox.deadLetters(), email);
      } finally {
        await store.close();
      }
    },
    async listed(email) {
      const list = spawnSync(process.execPath, [join(root, 'bin/cdp-edge.js'), 'outbox', 'list', '--json', '--state-file', join(state, 'relay-state.db')], {
        encoding: 'utf8',
      });
      if (list.status !== 0) throw new Error(`cdp-edge outbox list exited with ${list.status}: ${list.stderr}`);
      return heldOf(JSON.parse(list.stdout) as DeadLetter[], email);
    },
    faulted(email) {
      const of = (applied: boolean) => struck.filter((call) => call.applied === applied).flatMap((call) => eventsOf(call.events, email));
      return { applied: of(true), unapplied: of(false) };
    },
    received(email) {
      const person = emulator.emulator.snapshot().people.find((p) => p.fields?.['str::email'] === email);
      return (person?.events ?? []).filter((e) => e.activity_id.startsWith('act:cm:chaos-')).map((e) => String(e.attributes['str:cm:n']));
    },
    async close() {
      killRelay();
      await new Promise((resolve) => pages.close(resolve));
      pages.closeAllConnections();
      await emulator.close();
      rmSync(state, { recursive: true, force: true });
    },
  };
}
