// A Durable Object's outbox store that fails one settle after the platform answered 200 (as
// SQLITE_BUSY or a storage reset would), inside the real outbox object and its alarm: the settle
// is tried again within the lease, so no entry becomes an ambiguous dead letter, and each is
// delivered once.
import { createExecutionContext, env, runInDurableObject } from 'cloudflare:test';
import { beforeEach, expect, it } from 'vitest';
import worker from '../../src/relay/cloudflare.js';
import type { Outbox } from '../../src/relay/state/outbox.js';
import { createShardedOutbox, outboxName } from '../../src/relay/workers/outbox.js';
import { DEFAULT_SHARDS, hash } from '../../src/relay/workers/state.js';
import { upstreamControl } from '../relay/support/control.js';
import { ORIGIN, siteKey, sites, track } from '../relay/suite/target.js';
import { drained } from './target.js';

const upstream = upstreamControl(env['TEST_UPSTREAM'] as string);
const outbox = createShardedOutbox(env['RELAY_OUTBOX'], DEFAULT_SHARDS);

beforeEach(async () => {
  await drained(outbox);
  await upstream.reset();
});

it('a settle that fails once after a 200 is tried again: nothing becomes ambiguous, each item arrives once', async () => {
  const key = siteKey('blip');
  const queue = `blip-${crypto.randomUUID()}`;
  const namespace = env['RELAY_OUTBOX'];
  const stub = namespace.get(namespace.idFromName(outboxName(hash(queue) % DEFAULT_SHARDS)));
  // The object's own store fails its next settle of delivered entries, before it writes.
  await runInDurableObject(stub as never, async (instance: unknown) => {
    const object = instance as { store: { outbox: Outbox }; blips?: number };
    const store = object.store.outbox;
    const settle = store.settle.bind(store);
    object.blips = 0;
    store.settle = async (owner, settlement, now) => {
      if (settlement.delivered.length > 0 && object.blips === 0) {
        object.blips++;
        throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
      }
      return settle(owner, settlement, now);
    };
  });
  const batch = Array.from({ length: 10 }, (_, n) => track('act:cm:viewed', { 'str::email': `blip-${n}-${crypto.randomUUID().slice(0, 8)}@example.com` }));
  const response = await worker.fetch(
    new Request('https://relay.example.com/collect', {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': '192.0.2.77' },
      body: JSON.stringify({ key, queue, batch }),
    }),
    { ...env, RELAY_SITES: sites({ key, origins: [ORIGIN], verify: 'off' }) } as never,
    createExecutionContext(),
  );
  expect(((await response.json()) as { results: { status: string }[] }).results.map((result) => result.status)).toEqual(batch.map(() => 'accepted'));
  await drained(outbox);
  expect(await runInDurableObject(stub as never, async (instance: unknown) => (instance as { blips: number }).blips)).toBe(1);
  expect((await outbox.deadLetters({ site: key })).map((letter) => letter.reason)).toEqual([]);
  const sent = batch.map((item) => (item.person as Record<string, string>)['str::email']!);
  // This test's items only: the upstream and the objects are shared with the other files of the worker.
  const emails = (await upstream.received())
    .filter((call) => call.path === '/v1/activities/create' && call.status === 200)
    .flatMap((call) => call.body.activities.map((activity: { fields: Record<string, string> }) => activity.fields['str::email']!))
    .filter((email: string) => sent.includes(email));
  expect(emails.sort()).toEqual([...sent].sort());
});
