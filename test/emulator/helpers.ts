/** A real emulator on port 0 with a typed client and a raw `call` for what the client refuses to send. */
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { createClient, type Client } from '../../src/client/index.js';
import { startEmulator, type RunningEmulator, type StartOptions } from '../../src/emulator/index.js';

export const KEY = 'test-key';

export interface Harness {
  running: RunningEmulator;
  client: Client;
  /** a client that skips its own validation, to see the emulator's answers to bad bodies */
  loose: Client;
  call(path: string, body?: unknown, init?: { method?: string; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Headers }>;
}

/** Starts one emulator for the file and resets it before each test. */
export function useEmulator(options: StartOptions = {}): Harness {
  const harness = {} as Harness;
  beforeAll(async () => {
    harness.running = await startEmulator({ port: 0, key: KEY, ...options });
    harness.client = createClient({ apiKey: KEY, baseUrl: harness.running.url, retry: false });
    harness.loose = createClient({ apiKey: KEY, baseUrl: harness.running.url, retry: false, validate: false });
    harness.call = async (path, body, init = {}) => {
      const response = await fetch(harness.running.url + path, {
        method: init.method ?? 'POST',
        headers: { 'X-Api-Key': KEY, 'Content-Type': 'application/json', ...init.headers },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON (the dashboard)
      }
      return { status: response.status, body: parsed, headers: response.headers };
    };
  });
  beforeEach(() => harness.running.emulator.reset());
  afterAll(async () => {
    await harness.running?.close();
  });
  return harness;
}

/** Expects `promise` to reject with an HTTPError of `status`; returns it. */
export async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

export const email = (n: number) => `person${n}@example.com`;
