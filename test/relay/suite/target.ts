/**
 * What the shared /collect suite needs from a runtime: start a relay with extra configuration
 * variables, talk to it, restart it (state must survive), close it. Node and workerd each
 * provide one; the suite itself runs unchanged on both.
 */
import { expect } from 'vitest';
import type { Received, UpstreamControl } from '../support/control.js';

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
  /** the dead-letter list (entries the platform refused after acceptance, or held): [] where there is none */
  deadLetters(): Promise<{ id: string; reason: string }[]>;
  /** resolves once every accepted item has been delivered (or dead-lettered): at once where /collect forwards inline */
  drained(): Promise<void>;
  /** stops and starts the relay on the same state (Node: same state file; workerd: Durable Objects restarted) */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface RelayTarget {
  name: 'node' | 'workerd';
  /**
   * true where /collect answers `accepted` once the item is durable and a deliverer sends it later
   * (Node's outbox); false where the request forwards its own items and answers with the platform's outcome
   */
  deliversLater: boolean;
  upstream: UpstreamControl;
  /** a relay with the base variables (key, upstream, one site) plus `env` */
  start(env?: Record<string, string>): Promise<RelayUnderTest>;
}

/** What the platform received once `relays` delivered everything they accepted. */
export async function delivered(target: RelayTarget, ...relays: RelayUnderTest[]): Promise<Received[]> {
  await Promise.all(relays.map((relay) => relay.drained()));
  return target.upstream.received();
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

/**
 * Site JSON for RELAY_SITES. The suite's sites take unproven tracks (`verify: "open"`) unless a
 * case sets `verify`: its cases are about the protocol and delivery; identity-cases.ts covers `verify`.
 */
export const sites = (...list: Record<string, unknown>[]) => JSON.stringify(list.map((site) => ({ verify: 'open', ...site })));

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
