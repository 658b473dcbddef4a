// cdp-edge/server inside workerd: the tracker (fetch, Web Crypto and timers only) runs in the
// Worker runtime and sends to the relay's Worker entry, whose outbox objects (SQLite) deliver to
// the loopback platform: the same id sent twice, by two trackers as two instances would, lands once;
// an item without an id gets a UUID made in workerd, and `flush()` resolves once all are final.
import { createExecutionContext, env } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import worker from '../../src/relay/cloudflare.js';
import { hashToken } from '../../src/relay/core/tokens.js';
import { createShardedOutbox } from '../../src/relay/workers/outbox.js';
import { DEFAULT_SHARDS } from '../../src/relay/workers/state.js';
import { createServerTracker } from '../../src/server/index.js';
import { upstreamControl } from '../relay/support/control.js';
import { drained } from './target.js';

const upstream = upstreamControl(env['TEST_UPSTREAM'] as string);
const outbox = createShardedOutbox(env['RELAY_OUTBOX'], DEFAULT_SHARDS);
const TOKEN = 'rt_workerd_server_tracker_0123456789';

/** The relay's Worker with a `collect` token configured, as the tracker's `fetch`. */
async function relayFetch(): Promise<typeof fetch> {
  const instance = { ...env, RELAY_TOKENS: JSON.stringify([{ name: 'shop', sha256: await hashToken(TOKEN), scopes: ['collect'] }]) };
  return (input, init) => worker.fetch(new Request(input, init), instance as never, createExecutionContext());
}

/** The activities the platform took (2xx) for `email`. */
const landed = async (email: string) =>
  (await upstream.received())
    .filter((call) => call.path === '/v1/activities/create' && call.status >= 200 && call.status < 300)
    .flatMap((call) => call.body.activities as { fields?: Record<string, unknown> }[])
    .filter((activity) => activity.fields?.['str::email'] === email);

describe('createServerTracker in workerd, against the Worker entry', () => {
  beforeEach(async () => {
    await drained(outbox);
    await upstream.reset();
  });

  it('lands the same id sent twice (two instances) once, and an item without an id once', async () => {
    const fetch = await relayFetch();
    const email = `worker-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const [a, b] = [
      createServerTracker({ relay: 'https://relay.example.com', token: TOKEN, fetch }),
      createServerTracker({ relay: 'https://relay.example.com', token: TOKEN, fetch }),
    ];
    const paid = { id: `evt_${email}`, activity_id: 'act:cm:viewed', person: { 'str::email': email } };
    const first = await a.track(paid);
    const again = await b.track(paid);
    const fresh = b.track({ activity_id: 'act:cm:viewed', person: { 'str::email': `fresh-${email}` } });
    await Promise.all([a.flush(), b.flush()]);
    expect([first.status, again.status, (await fresh).status]).toEqual(['accepted', 'duplicate', 'accepted']);
    expect((await fresh).id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    await drained(outbox);
    expect(await landed(email)).toHaveLength(1);
    expect(await landed(`fresh-${email}`)).toHaveLength(1);
  });
});
