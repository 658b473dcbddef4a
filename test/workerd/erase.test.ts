// Erasure on a deployed Worker (`cdp-edge erase --relay URL` calls its admin door): the real entry
// in workerd, its outbox objects, the platform stand-in in front of the emulator. The person's dead
// letter and their entries waiting in two outbox objects go, nobody else's do; the Worker then
// refuses their items (`suppressed`), and the platform receives person/archive and person/delete.
import { createExecutionContext, env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import worker from '../../src/relay/cloudflare.js';
import { createToken } from '../../src/relay/core/tokens.js';
import type { OutboxItem } from '../../src/relay/state/outbox.js';
import { createShardedOutbox, outboxName } from '../../src/relay/workers/outbox.js';
import { DEFAULT_SHARDS } from '../../src/relay/workers/state.js';
import { upstreamControl } from '../relay/support/control.js';
import { identify, ORIGIN, siteKey, sites, track } from '../relay/suite/target.js';
import { drained } from './target.js';

const upstream = upstreamControl(env['TEST_UPSTREAM'] as string);
const outbox = createShardedOutbox(env['RELAY_OUTBOX'], DEFAULT_SHARDS);
const key = siteKey('erase');
const ANN = `ann-${crypto.randomUUID().slice(0, 8)}@example.com`;
const BOB = `bob-${crypto.randomUUID().slice(0, 8)}@example.com`;
let vars: Record<string, string>;
let admin: string;

beforeAll(async () => {
  const ops = await createToken({ name: 'ops', scopes: ['admin'] });
  admin = ops.token;
  vars = { RELAY_SITES: sites({ key, origins: [ORIGIN], verify: 'off' }), RELAY_TOKENS: JSON.stringify([ops.entry]) };
  await drained(outbox);
  await upstream.reset();
});

const send = (path: string, init: RequestInit = {}) =>
  worker.fetch(new Request(`https://relay.example.com${path}`, init), { ...env, ...vars } as never, createExecutionContext());
const collect = async (item: unknown) => {
  const response = await send('/collect', {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': '192.0.2.80' },
    body: JSON.stringify({ key, queue: crypto.randomUUID(), batch: [item] }),
  });
  return ((await response.json()) as { results: { status: string; reason?: string }[] }).results[0]!;
};
/** An outbox object as the Worker reaches it. */
const shard = (n: number) => {
  const namespace = env['RELAY_OUTBOX'];
  return namespace.get(namespace.idFromName(outboxName(n)));
};
/**
 * Until no outbox object runs a delivery round. A round that has just delivered waits
 * `RELAY_DELIVERY_WAIT_MS` for more entries before it ends, and takes what comes meanwhile: an
 * entry put in its object then is delivered, not left waiting for the erasure to find.
 */
async function roundsOver(): Promise<void> {
  const until = Date.now() + 10_000;
  for (;;) {
    const usage = await Promise.all(Array.from({ length: DEFAULT_SHARDS }, (_, n) => shard(n).usage()));
    if (!usage.some(({ delivering }) => delivering)) return;
    if (Date.now() > until) throw new Error('an outbox object was still running a delivery round after 10 s');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
const waiting = (id: string, email: string): OutboxItem => ({
  site: key,
  id,
  kind: 'activity',
  entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': email } },
  browser: `b-${id}`,
  visitor: `v-${id}`,
  accepted: Date.now(),
});

describe("the Worker's erasure", () => {
  it("drops the person's entries in every outbox object, refuses their items afterwards, and deletes them on the platform", async () => {
    await fetch(`${upstream.url}/v1/person/merge`, {
      method: 'POST',
      headers: { 'x-api-key': env['CDP_API_KEY'] as string, 'content-type': 'application/json' },
      body: JSON.stringify({ merge_by: ['str::email'], people: [{ fields: { 'str::email': ANN } }] }),
    });
    // A dead letter of Ann's: the platform refuses her track.
    await upstream.faults([{ status: 400, body: { request_id: 'r1', code: 400, error: 'refused for now' }, when: ANN }]);
    expect(await collect(track('act:cm:viewed', { 'str::email': ANN }))).toMatchObject({ status: 'accepted' });
    await drained(outbox);
    expect((await outbox.deadLetters({ site: key })).length).toBe(1);
    await roundsOver();
    // Entries waiting in two objects (put there without waking their alarms): two of Ann's, one of Bob's.
    await shard(0).accept([waiting('w0', ANN.toUpperCase())], Date.now(), 3600_000);
    await shard(DEFAULT_SHARDS - 1).accept([waiting('w1', ANN), waiting('w2', BOB)], Date.now(), 3600_000);

    const answer = await send('/admin/erase', {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: ANN }),
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({
      dropped: { waiting: 2, dead_letters: 1 },
      in_flight: 0,
      platform: { status: 'deleted', found: 1, archived: 1, deleted: 1 },
      complete: true,
    });
    expect(await outbox.deadLetters({ site: key })).toEqual([]);
    expect((await shard(0).stats()).pending).toBe(0);
    expect((await shard(DEFAULT_SHARDS - 1).stats()).pending).toBe(1);

    // The Worker refuses Ann's items now; Bob's go.
    expect(await collect(identify({ 'str::email': ANN }))).toMatchObject({ status: 'rejected', reason: 'suppressed' });
    expect(await collect(track('act:cm:viewed', { 'str::email': BOB }))).toMatchObject({ status: 'accepted' });
    const calls = (await upstream.received()).filter((call) => call.path === '/v1/person/archive' || call.path === '/v1/person/delete');
    expect(calls.map(({ path, status }) => [path, status])).toEqual([
      ['/v1/person/archive', 200],
      ['/v1/person/delete', 200],
    ]);
    expect(calls[1]!.body).toEqual({ inclusion_ids: [expect.any(String)] });
    // Bob's waiting entry is delivered as ever once its object wakes.
    await shard(DEFAULT_SHARDS - 1).wake();
    await drained(outbox);
  });
});
