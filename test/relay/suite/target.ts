/**
 * What the shared /collect suite needs from a runtime: start a relay with extra configuration
 * variables, talk to it, restart it (state must survive), close it. Node and workerd each
 * provide one; the suite itself runs unchanged on both.
 */
import { expect } from 'vitest';
import type { UpstreamControl } from '../support/control.js';

export const API_KEY = 'test-platform-key-7f3a9c';
export const ORIGIN = 'https://shop.example.com';
export const IDENTITY_SECRET = 'identity-secret-for-tests-0123456789';

export interface PostOptions {
  /** null sends no Origin header */
  origin?: string | null;
  contentType?: string | null;
  headers?: Record<string, string>;
}

export interface RelayUnderTest {
  /** POST /collect with `body` (JSON-encoded unless a string) */
  post(body: unknown, options?: PostOptions): Promise<Response>;
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** the visitor address the platform should see as location.source_ip */
  visitorIp: string;
  /** the location.custom the runtime adds for items without one (Workers: from request.cf) */
  visitorCustom: Record<string, unknown> | undefined;
  /** stops and starts the relay on the same state (Node: same state file; workerd: Durable Objects restarted) */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface RelayTarget {
  name: 'node' | 'workerd';
  upstream: UpstreamControl;
  /** a relay with the base variables (key, upstream, one site) plus `env` */
  start(env?: Record<string, string>): Promise<RelayUnderTest>;
}

/** Every response seen by the suite, to prove the key never leaks. */
export const seen: { status: number; headers: string; body: string }[] = [];

/** Reads a response fully and records it for the key-leak check. */
export async function read(response: Response): Promise<{ status: number; headers: Headers; body: any; text: string }> {
  const text = await response.text();
  const headers = [...response.headers].map(([name, value]) => `${name}: ${value}`).join('\n');
  seen.push({ status: response.status, headers, body: text });
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, text };
}

/** Asserts that no recorded response carried the platform key. */
export function expectKeyNeverSeen(): void {
  expect(seen.length).toBeGreaterThan(20);
  for (const response of seen) {
    expect(response.body).not.toContain(API_KEY);
    expect(response.headers).not.toContain(API_KEY);
  }
}

/** Site JSON for RELAY_SITES. */
export const sites = (...list: Record<string, unknown>[]) => JSON.stringify(list);

let counter = 0;
/** A unique site key per test, so Durable Objects and buckets never mix tests. */
export const siteKey = (label: string) => `pk_${label}_${Date.now().toString(36)}_${(counter++).toString(36)}`;

export const uid = () => crypto.randomUUID();

export const identify = (fields: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id: uid(),
  type: 'identify',
  ts: new Date().toISOString(),
  fields,
  ...extra,
});
export const track = (activityId: string, person: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}) => ({
  id: uid(),
  type: 'track',
  ts: new Date().toISOString(),
  activity_id: activityId,
  ...(person ? { person } : {}),
  ...extra,
});
