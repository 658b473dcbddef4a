// What the order and leadership tests share: the real emulator with the `viewed` activity defined,
// deliverers of one open site whose every platform call is recorded from the moment it leaves to
// its answer, and outbox items of that site.
import { expect } from 'vitest';
import { type RunningEmulator, type StartOptions, startEmulator } from '../../../src/emulator/index.js';
import { systemClock } from '../../../src/relay/core/clock.js';
import { parseConfig } from '../../../src/relay/core/config.js';
import { createUpstream } from '../../../src/relay/deliver/caller.js';
import { createDeliverer, type Deliverer, type DelivererOptions } from '../../../src/relay/deliver/deliverer.js';
import { fetchTransport, type Transport } from '../../../src/relay/deliver/transport.js';
import type { OutboxItem } from '../../../src/relay/state/outbox.js';

export interface RecordedCall {
  /** the deliverer that made it */
  by: string;
  endpoint: 'person/merge' | 'activities/create';
  /** the `str::email` of each entry, in call order */
  emails: string[];
  left: number;
  /** +Infinity until answered */
  answered: number;
  /** the HTTP status; 0 until answered or when no answer came */
  status: number;
}

/** The emulator on a free port for API key `key`, with the activity `viewed` defined. */
export async function startViewedEmulator(key: string, options: StartOptions = {}): Promise<RunningEmulator> {
  const emulator = await startEmulator({ port: 0, key, plan: 'business', ...options });
  const response = await fetch(`${emulator.url}/v1/definitions/activity/create`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify({ name: 'viewed', attributes: [] }),
  });
  expect(response.ok).toBe(true);
  return emulator;
}

/** A fetch transport that records each call `by` makes in `calls`, and tells `onCall` as it leaves. */
export function recordingTransport(by: string, calls: RecordedCall[], onCall: () => void = () => {}): Transport {
  return fetchTransport(async (input, init) => {
    const body = JSON.parse(String(init?.body)) as { people?: { fields: Record<string, string> }[]; activities?: { fields: Record<string, string> }[] };
    const call: RecordedCall = {
      by,
      endpoint: String(input).includes('person/merge') ? 'person/merge' : 'activities/create',
      emails: [...(body.people ?? []), ...(body.activities ?? [])].map((entry) => entry.fields['str::email']!),
      left: Date.now(),
      answered: Number.POSITIVE_INFINITY,
      status: 0,
    };
    calls.push(call);
    onCall();
    try {
      const response = await fetch(input, init);
      call.status = response.status;
      return response;
    } finally {
      call.answered = Date.now();
    }
  });
}

/** The sites of a relay with the one open site `site`. */
const sitesOf = (key: string, site: string) =>
  parseConfig({
    CDP_API_KEY: key,
    CDP_BASE_URL: 'http://127.0.0.1:1',
    RELAY_SITES: JSON.stringify([{ key: site, origins: ['https://shop.example.com'], verify: 'open' }]),
    RELAY_LOG: 'off',
  }).sites;

export interface RecordingDelivererOptions
  extends Pick<DelivererOptions, 'outbox' | 'pacer'>,
    Partial<Omit<DelivererOptions, 'outbox' | 'pacer' | 'upstream'>> {
  /** its name in the lead lock, and in `calls` */
  by: string;
  /** the platform, and its API key */
  emulator: RunningEmulator;
  apiKey: string;
  /** the one (open) site it delivers for */
  site: string;
  calls: RecordedCall[];
  onCall?: () => void;
}

/** A deliverer of `site` to `emulator` whose every call is recorded in `calls`; the rest of the options as given. */
export function recordingDeliverer({ by, emulator, apiKey, site, calls, onCall, ...options }: RecordingDelivererOptions): Deliverer {
  return createDeliverer({
    clock: systemClock,
    sites: sitesOf(apiKey, site),
    waitMs: 0,
    ambiguous: 'hold',
    owner: by,
    ...options,
    upstream: createUpstream({
      baseUrl: emulator.url,
      apiKey,
      transport: recordingTransport(by, calls, onCall),
      timeoutMs: options.callTimeoutMs ?? 10_000,
      backoff: { until: 0 },
      now: Date.now,
    }),
  });
}

/** An item of `site` from `browser`: an identify (with `fields`) or a track of `act:cm:viewed`, naming `email`. */
export const storeItem = (site: string, kind: OutboxItem['kind'], email: string, browser: string, fields: Record<string, unknown> = {}): OutboxItem => ({
  site,
  id: crypto.randomUUID(),
  kind,
  entry: kind === 'activity' ? { activity_id: 'act:cm:viewed', fields: { 'str::email': email } } : { fields: { 'str::email': email, ...fields } },
  browser,
  visitor: `visitor-${browser}`,
  accepted: Date.now(),
});
