// A platform that answers 2xx and stalls mid-body: the deliverer reads the whole answer within the
// call's timeout, on the Worker's transport (a standard fetch, which hands a chunked body over as
// a stream) and on the Node entry's (undici). The call's entries are then in doubt (`ambiguous`):
// the platform may have applied them. Before, a streamed body had no timer: the call, and the
// round waiting for it, never ended.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createUpstream } from '../../src/relay/deliver/caller.js';
import { callOnce } from '../../src/relay/deliver/send.js';
import { fetchTransport, type Transport } from '../../src/relay/deliver/transport.js';
import { createNodeHttpTransport } from '../../src/relay/deliver/node-http.js';
import { createUndiciTransport } from '../../src/relay/deliver/undici.js';
import { upstreamControl } from './support/control.js';
import { startTestUpstream, type TestUpstream } from './support/upstream.js';

const KEY = 'stalled-body-key';
let upstream: TestUpstream;
beforeAll(async () => {
  upstream = await startTestUpstream({ key: KEY });
});
afterAll(() => upstream?.close());

it.each([
  ['fetch (the Worker)', () => fetchTransport(fetch)],
  ['undici (Node)', () => createUndiciTransport()],
  ['node:http (Node)', () => createNodeHttpTransport()],
] as [string, () => Transport][])('ends a call whose 2xx answer stalls mid-body within its timeout, its entries in doubt: %s', async (_, transport) => {
  const control = upstreamControl(upstream.url);
  await control.faults([{ stallBody: true }]);
  const caller = createUpstream({ baseUrl: upstream.url, apiKey: KEY, transport: transport(), timeoutMs: 10_000, backoff: { until: 0 }, now: Date.now });
  const body = JSON.stringify({ activities: [{ activity_id: 'act:cm:viewed', fields: { 'str::email': 'stall@example.com' } }] });
  const started = Date.now();
  const outcome = await Promise.race([
    callOnce(caller, 'activities/create', body, { timeoutMs: 500, paced: true }),
    new Promise((resolve) => setTimeout(() => resolve('still reading after 5 s'), 5_000)),
  ]);
  expect(outcome).toMatchObject({ kind: 'ambiguous' });
  // The call's timeout (500 ms), not the guard's 5 s, ended it.
  expect(Date.now() - started).toBeLessThan(4_000);
  expect((await control.received()).at(-1)?.status).toBe(200);
});
