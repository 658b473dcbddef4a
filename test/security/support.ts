/**
 * What every attack starts with: a real emulator (the platform, with its per-key budget and its
 * bad-request ban when asked) and a relay in front of it over real HTTP, trusting loopback's
 * X-Forwarded-For so one test can play many visitors. Attacks go to the relay's public port only.
 */
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { parseConfig } from '../../src/relay/core/config.js';
import { type RunningRelay, type StartRelayOptions, startRelay } from '../../src/relay/node.js';
import { hashToken } from '../../src/relay/core/tokens.js';
import { startTestUpstream, type TestUpstream } from '../relay/support/upstream.js';

export const KEY = 'security-platform-key-5c1d';
export const ORIGIN = 'https://shop.example.com';
export const SITE = 'pk_shop';
export const PROXY_TOKEN = 'rt_security_proxy_token_0123456789';

export interface Stack {
  emulator: RunningEmulator;
  relay: RunningRelay;
  /** with `record`: every platform call the relay made, read through `${recorder.url}/__control/received` */
  recorder?: TestUpstream;
  close(): Promise<void>;
}

export interface StackOptions {
  /** the emulator's per-key budget and ban model @default false */
  rateLimit?: number | boolean;
  /** more relay variables */
  env?: Record<string, string>;
  relay?: Omit<StartRelayOptions, 'config'>;
  /** put a recorder between the relay and the emulator (it passes every call on) */
  record?: boolean;
}

/** Starts an emulator with `signed-up` (attribute `plan`) defined, and a relay for site {@link SITE}. */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const emulator = await startEmulator({ port: 0, key: KEY, plan: 'business', rateLimit: options.rateLimit ?? false });
  const seeded = await fetch(`${emulator.url}/v1/definitions/activity/create`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY },
    body: JSON.stringify({ name: 'signed-up', attributes: [{ name: 'plan', display_type: 'text' }] }),
  });
  if (!seeded.ok) throw new Error(`seeding: ${seeded.status} ${await seeded.text()}`);
  const recorder = options.record ? await startTestUpstream({ key: KEY, emulatorUrl: emulator.url }) : undefined;
  const config = parseConfig({
    CDP_API_KEY: KEY,
    CDP_BASE_URL: recorder?.url ?? emulator.url,
    // These attacks are about limits and addresses: the site forwards items as sent (identity.test.ts
    // covers what an unproven browser may write).
    RELAY_SITES: JSON.stringify([{ key: SITE, origins: [ORIGIN], verify: 'off' }]),
    RELAY_TOKENS: JSON.stringify([{ name: 'crm', sha256: await hashToken(PROXY_TOKEN), scopes: ['read'] }]),
    RELAY_TRUST_PROXY: '127.0.0.1',
    RELAY_LOG: 'off',
    ...options.env,
  });
  const relay = await startRelay({ port: 0, config, ...options.relay });
  return {
    emulator,
    relay,
    ...(recorder ? { recorder } : {}),
    close: async () => {
      await relay.close();
      await recorder?.close();
      await emulator.close();
    },
  };
}

let counter = 0;
/** A fresh item id. */
export const itemId = (): string => `item-${process.pid}-${Date.now()}-${++counter}`;

/** Posts a /collect batch as visitor `ip`. */
export function collect(relayUrl: string, ip: string, batch: unknown[], init: { key?: string } = {}): Promise<Response> {
  return fetch(`${relayUrl}/collect`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', origin: ORIGIN, 'x-forwarded-for': ip },
    body: JSON.stringify({ key: init.key ?? SITE, batch }),
  });
}

/** A track of `signed-up` for `email`. */
export const goodTrack = (email: string) => ({
  id: itemId(),
  type: 'track',
  activity_id: 'act:cm:signed-up',
  attributes: { 'str:cm:plan': 'pro' },
  person: { 'str::email': email },
});

/** Waits for what an accepted item should have done on the platform (delivery comes after the answer). */
export async function until<T>(what: string, probe: () => Promise<T | undefined | false>): Promise<T> {
  for (let waited = 0; waited < 10_000; waited += 50) {
    const value = await probe();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}
