/**
 * Everything `cdp-edge dev` runs, as one function the CLI and the tests share: the emulator
 * with the demo's seed (unless a real upstream is given), the demo site, and the relay in
 * front of the upstream, configured for the demo site with a read token for the proxy. The
 * demo's tracking plan (demo/cdp-edge.plan.json) defines the emulator's activities and what the
 * relay lets the demo site send.
 *
 * @example
 * const stack = await startDevStack({ emulatorPort: { port: 0 }, relayPort: { port: 0 }, demoPort: { port: 0 } });
 * console.log(stack.demo.url); await stack.close();
 * @module
 */
import { randomBytes } from 'node:crypto';
import { createClient } from '../client/index.js';
import { startEmulator, type RunningEmulator } from '../emulator/node.js';
import type { LogLevel } from '../relay/core/config.js';
import type { Logger } from '../relay/core/logging.js';
import { startRelay, type RunningRelay } from '../relay/node.js';
import { createToken } from '../relay/core/tokens.js';
import { listenOn, type PortChoice } from './ports.js';
import { demoPlanFile, seedDemo } from './seed.js';
import { startDemoServer, type DemoConfig, type RunningDemo } from './server.js';

/** The site key of the demo page (public, like every site key). */
export const DEMO_SITE_KEY = 'pk_demo';
/** The emulator's API key in dev: not a secret, the emulator is on loopback. */
export const EMULATOR_KEY = 'dev-key';

/** The real platform, instead of the emulator. */
export interface Upstream {
  baseUrl: string;
  apiKey: string;
}

export interface DevStackOptions {
  /** @default { port: 8790 } */
  emulatorPort?: PortChoice;
  /** @default { port: 8787 } */
  relayPort?: PortChoice;
  /** @default { port: 8080 } */
  demoPort?: PortChoice;
  /** @default '127.0.0.1' */
  hostname?: string;
  /** forward to the real platform; no emulator is started */
  upstream?: Upstream;
  /** the emulator keeps its state in this JSON file */
  data?: string;
  /** the relay's log lines @default discarded */
  logger?: Logger;
  /** RELAY_LOG for the relay: `debug` adds a line per item @default 'info' */
  logLevel?: LogLevel;
}

export interface DevStack {
  /** absent when `upstream` was given */
  emulator?: RunningEmulator;
  relay: RunningRelay;
  demo: RunningDemo;
  /** where the relay forwards to */
  upstream: string;
  siteKey: string;
  /** a proxy token with the `read` scope, made for this run */
  readToken: string;
  /** `RELAY_IDENTITY_SECRET` of this run (random) */
  identitySecret: string;
  /** ports that moved because the default was taken */
  notes: string[];
  /** stops the relay, the demo and the emulator (writing its data file) */
  close(): Promise<void>;
}

/** Starts the emulator (seeded when empty), the demo site and the relay; on failure stops what started. */
export async function startDevStack(options: DevStackOptions = {}): Promise<DevStack> {
  const hostname = options.hostname ?? '127.0.0.1';
  const notes: string[] = [];
  const started: Array<{ close(): Promise<void> }> = [];
  const close = async () => {
    for (const part of started.splice(0).reverse()) await part.close().catch(() => {});
  };
  const bind = async <T extends { close(): Promise<void> }>(choice: PortChoice, what: string, start: (port: number) => Promise<T>) => {
    const { value, moved } = await listenOn(choice, what, start);
    started.push(value);
    if (moved) notes.push(moved);
    return value;
  };

  try {
    let emulator: RunningEmulator | undefined;
    if (!options.upstream) {
      emulator = await bind(options.emulatorPort ?? { port: 8790 }, 'emulator', (port) =>
        startEmulator({ port, hostname, key: EMULATOR_KEY, plan: 'business', ...(options.data !== undefined ? { data: options.data } : {}) }),
      );
      const state = emulator.emulator.snapshot();
      if (state.people.length === 0 && state.activities.length === 0) await seedDemo(createClient({ apiKey: EMULATOR_KEY, baseUrl: emulator.url }));
    }
    const upstream = options.upstream ?? { baseUrl: emulator!.url, apiKey: EMULATOR_KEY };

    const config: DemoConfig = { relay: '', key: DEMO_SITE_KEY, identitySecret: randomBytes(32).toString('hex') };
    const demo = await bind(options.demoPort ?? { port: 8080 }, 'demo site', (port) => startDemoServer({ port, hostname, config: () => config }));

    const { token: readToken, entry } = await createToken({ name: 'demo-read', scopes: ['read'] });
    const site = {
      key: DEMO_SITE_KEY,
      name: 'demo',
      // The page may be opened as 127.0.0.1 or as localhost.
      origins: [demo.url, demo.url.replace(hostname, 'localhost')],
      // what the page may send (activities, fields, attribute types) comes from the plan: RELAY_PLAN below
      verify: 'required',
    };
    const relay = await bind(options.relayPort ?? { port: 8787 }, 'relay', (port) =>
      startRelay({
        port,
        hostname,
        // the status page and /metrics on a free loopback port, printed with the other addresses
        metricsPort: 0,
        metricsHostname: hostname,
        logger: options.logger ?? (() => {}),
        env: {
          CDP_API_KEY: upstream.apiKey,
          CDP_BASE_URL: upstream.baseUrl,
          RELAY_SITES: JSON.stringify([site]),
          RELAY_TOKENS: JSON.stringify([entry]),
          RELAY_IDENTITY_SECRET: config.identitySecret,
          RELAY_PLAN: demoPlanFile(),
          RELAY_LOG: options.logLevel ?? 'info',
        },
      }),
    );
    config.relay = relay.url;
    if (emulator) config.dashboard = `${emulator.url}/`;

    return {
      ...(emulator ? { emulator } : {}),
      relay,
      demo,
      upstream: upstream.baseUrl,
      siteKey: DEMO_SITE_KEY,
      readToken,
      identitySecret: config.identitySecret,
      notes,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
