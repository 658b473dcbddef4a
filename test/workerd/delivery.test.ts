// The Worker as the shipped template configures it (no queue bound, RELAY_SHARDS unset but in the fill case), with its
// real outbox objects (SQLite) and their alarms, against the loopback platform: /collect answers
// `accepted` once the items are in the outbox objects, whatever the platform does, and the objects
// deliver them exactly once, in full calls, holding what may have been applied without an answer.
import { createExecutionContext, env } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import worker from '../../src/relay/cloudflare.js';
import { createShardedOutbox } from '../../src/relay/workers/outbox.js';
import { DEFAULT_SHARDS } from '../../src/relay/workers/state.js';
import { type Received, upstreamControl } from '../relay/support/control.js';
import { ORIGIN, siteKey, sites, track } from '../relay/suite/target.js';
import { drained } from './target.js';

const upstream = upstreamControl(env['TEST_UPSTREAM'] as string);
const outbox = createShardedOutbox(env['RELAY_OUTBOX'], DEFAULT_SHARDS);
/**
 * How long the platform is down in the outage case (ms): many of an entry's retry waits
 * (RELAY_DELIVERY_RETRY_MS, 100 ms in wrangler.toml), so the items accepted first are tried and
 * released again and again during it. (A /collect on Workers without a queue never waits for the
 * platform: it answers once the items are in the outbox objects.)
 */
const OUTAGE_MS = Number(env['TEST_OUTAGE_MS'] ?? 5_000);

/** A /collect of `body` to a relay of the template's vars (`vars` added). */
function post(key: string, body: unknown, ip = '192.0.2.50', vars: Record<string, string> = {}): Promise<Response> {
  const request = new Request('https://relay.example.com/collect', {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': ip },
    body: JSON.stringify(body),
  });
  return worker.fetch(request, { ...env, RELAY_SITES: sites({ key, origins: [ORIGIN], verify: 'off' }), ...vars } as never, createExecutionContext());
}
const statuses = async (response: Response) => ((await response.json()) as { results: { status: string }[] }).results.map((r) => r.status);

/**
 * The activities of `items` the platform took (2xx), by the email each carries, and the calls that
 * carried any: this file's own, never another file's that shares the upstream and the objects.
 */
async function taken(items: ReturnType<typeof track>[]): Promise<{ calls: number[]; emails: string[] }> {
  const own = new Set(items.map(emailOf));
  const emailsOf = (call: Received) =>
    call.body.activities.map((activity: { fields: Record<string, string> }) => activity.fields['str::email']!).filter((email: string) => own.has(email));
  const applied = (await upstream.received()).filter(
    (call) => call.path === '/v1/activities/create' && call.status >= 200 && call.status < 300 && emailsOf(call).length > 0,
  );
  return { calls: applied.map((call) => emailsOf(call).length), emails: applied.flatMap(emailsOf) };
}
const visit = (label: string, n: number) => track('act:cm:viewed', { 'str::email': `${label}-${n}-${crypto.randomUUID().slice(0, 8)}@example.com` });
const emailOf = (item: ReturnType<typeof track>) => (item.person as Record<string, string>)['str::email']!;

describe('the Worker without a queue: accept, then deliver', () => {
  beforeEach(async () => {
    await drained(outbox);
    await upstream.reset();
  });

  it(`answers accepted to every item while the platform answers 503 for ${OUTAGE_MS / 1000} s, then delivers each exactly once`, async () => {
    const key = siteKey('outage');
    const sent: ReturnType<typeof track>[] = [];
    await upstream.always({ status: 503 });
    const ended = Date.now() + OUTAGE_MS;
    try {
      // Visitors keep coming through the outage: a request of three items every 250 ms, each from its own browser.
      for (let n = 0; Date.now() < ended; n++) {
        const batch = [visit('outage', 3 * n), visit('outage', 3 * n + 1), visit('outage', 3 * n + 2)];
        sent.push(...batch);
        expect(await statuses(await post(key, { key, queue: crypto.randomUUID(), batch }))).toEqual(['accepted', 'accepted', 'accepted']);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      // The objects kept trying: the platform was called, and answered 503 every time.
      const during = (await upstream.received()).filter(
        (call) => call.path === '/v1/activities/create' && sent.some((item) => JSON.stringify(call.body).includes(emailOf(item))),
      );
      expect(during.length).toBeGreaterThan(0);
      expect(during.every((call) => call.status === 503)).toBe(true);
      expect((await outbox.stats()).pending).toBe(sent.length);
    } finally {
      await upstream.always(undefined);
    }
    await drained(outbox, 90_000);
    const { emails } = await taken(sent);
    expect(emails.sort()).toEqual(sent.map(emailOf).sort());
    expect((await outbox.deadLetters({ site: key })).length).toBe(0);
  }, 150_000);

  it('fills calls with items from many requests', async () => {
    const key = siteKey('fill');
    const items = Array.from({ length: 400 }, (_, n) => visit('fill', n));
    // 400 requests of one item each, from 400 browsers, 50 at a time, into one outbox object
    // (RELAY_SHARDS=1): its calls fill with what came while it waited or sent. Spread over the 16
    // objects, each object got a 16th of the arrival, and the calls followed the key's pacer (10 a
    // second, each object's call thin) for as long as the arrival lasted, which load stretches:
    // 58-64 calls for 400 requests sent in 16-20 s at load 15-18, 85-104 in 3 of 5 runs at load 24.
    const started = Date.now();
    for (let start = 0; start < items.length; start += 50) {
      const answers = await Promise.all(
        items
          .slice(start, start + 50)
          .map(async (item) => statuses(await post(key, { key, queue: crypto.randomUUID(), batch: [item] }, undefined, { RELAY_SHARDS: '1' }))),
      );
      expect(answers.flat().every((status) => status === 'accepted')).toBe(true);
    }
    const seconds = (Date.now() - started) / 1000;
    await drained(outbox, 60_000);
    const { calls, emails } = await taken(items);
    // Each item arrived once; on a machine so busy that a call outlived its 10 s, that call's items
    // are held as ambiguous dead letters instead (never sent again), and only those may be missing.
    expect(new Set(emails).size, 'no item arrived twice').toBe(emails.length);
    const held = new Set((await outbox.deadLetters({ site: key })).filter(({ reason }) => reason === 'ambiguous').map(({ id }) => id));
    const missing = items.filter((item) => !emails.includes(emailOf(item)));
    if (missing.length > 0) console.warn(`fill: ${missing.length} items not taken by the platform, ${held.size} held as ambiguous`);
    expect(missing.filter((item) => !held.has(item.id)).map(emailOf), 'items neither taken by the platform nor held').toEqual([]);
    const perCall = emails.length / calls.length;
    console.log(
      `fill: ${items.length} requests in ${seconds.toFixed(1)} s → ${calls.length} activities/create calls, ${perCall.toFixed(1)} entries per call (largest ${Math.max(...calls)})`,
    );
    // One call per request forwarded inline; here a call carries what many requests accepted.
    expect(calls.length).toBeLessThanOrEqual(items.length / 5);
  }, 90_000);

  it('holds an activity whose call was applied but whose answer was lost: a dead letter `ambiguous`, never sent twice', async () => {
    const key = siteKey('lost');
    const item = visit('lost', 0);
    // The platform takes the first call, then the connection closes before its answer. workerd
    // then logs "uncaught exception ... Network connection lost" under the vitest pool: its own log,
    // not the relay's promise. A bare `fetch(...).catch()` to this upstream logs it too, before the
    // catch runs, and no `unhandledrejection` reaches the isolate; the relay's caller gets the error
    // (the dead letter below).
    await upstream.faults([{ lose: true }]);
    expect(await statuses(await post(key, { key, batch: [item] }))).toEqual(['accepted']);
    await drained(outbox, 60_000);
    expect((await outbox.deadLetters({ site: key })).map(({ id, reason }) => ({ id, reason }))).toEqual([{ id: item.id, reason: 'ambiguous' }]);
    // The browser's resend is a duplicate; a later round of the alarm sends nothing either.
    expect(await statuses(await post(key, { key, batch: [item] }))).toEqual(['duplicate']);
    await drained(outbox);
    expect((await taken([item])).emails).toEqual([emailOf(item)]);
    expect(
      (await upstream.received()).filter((call) => call.path === '/v1/activities/create' && JSON.stringify(call.body).includes(emailOf(item))),
    ).toHaveLength(1);
  }, 90_000);
});
