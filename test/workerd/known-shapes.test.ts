// The Worker entry with its real outbox objects (whose alarms deliver, apart from the isolate that
// answers /collect) and RelayState objects: while a site's refusal guard is closed, an unproven
// item of a shape the platform took lately still goes, and only new shapes are answered `retry`.
// Before, ingest's shapes were its isolate's memory, which nothing on Workers ever taught: a
// closed guard held back every unproven item the plan did not vouch for.
import { createExecutionContext, env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import worker from '../../src/relay/cloudflare.js';
import { chargeDelivered, refusalKey, siteGuardWait, siteKey as guardKey, visitorKey } from '../../src/relay/core/limits.js';
import { GUARD_RETRY } from '../../src/relay/ingest/guard.js';
import { durableRefusals, REFUSAL_OBJECTS } from '../../src/relay/workers/refusals.js';
import { durableShapes, teachShapes } from '../../src/relay/workers/shapes.js';
import { entryShape } from '../../src/relay/ingest/shapes.js';
import { createShardedOutbox } from '../../src/relay/workers/outbox.js';
import { DEFAULT_SHARDS, hash } from '../../src/relay/workers/state.js';
import { upstreamControl } from '../relay/support/control.js';
import { identify, ORIGIN, siteKey, sites, track } from '../relay/suite/target.js';
import { drained } from './target.js';

const upstream = upstreamControl(env['TEST_UPSTREAM'] as string);
const outbox = createShardedOutbox(env['RELAY_OUTBOX'], DEFAULT_SHARDS);
/** This file's emails, `name-tag@example.com`: what the platform took is told apart from another file's sharing the upstream. */
const tag = crypto.randomUUID().slice(0, 8);
const emailFor = (name: string) => `${name}-${tag}@example.com`;

interface Result {
  status: string;
  error?: string;
}
async function post(key: string, batch: unknown[], ip: string): Promise<Result[]> {
  const request = new Request('https://relay.example.com/collect', {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': ip },
    body: JSON.stringify({ key, batch }),
  });
  // A new env object is a new Worker instance: nothing carries over in the isolate's memory.
  const response = await worker.fetch(request, { ...env, RELAY_SITES: sites({ key, origins: [ORIGIN], verify: 'off' }) } as never, createExecutionContext());
  const body = (await response.json()) as { results?: Result[]; error?: { details?: Result[] } };
  return body.results ?? body.error?.details ?? [];
}

/** The emails of the entries the platform took (2xx), by endpoint. */
async function taken(endpoint: 'activities/create' | 'person/merge'): Promise<string[]> {
  const member = endpoint === 'person/merge' ? 'people' : 'activities';
  return (await upstream.received())
    .filter((call) => call.path === `/v1/${endpoint}` && call.status >= 200 && call.status < 300)
    .flatMap((call) => call.body[member].map((entry: { fields: Record<string, string> }) => entry.fields['str::email']!));
}

describe("a site's closed refusal guard on Workers and the shapes the platform took", () => {
  it('lets unproven items of a shape taken lately go, and holds back only new shapes', async () => {
    await drained(outbox);
    await upstream.reset();
    const key = siteKey('shapes');
    const signedUp = (email: string) => track('act:cm:signed-up', { 'str::email': email }, { attributes: { 'str:cm:plan': 'pro' } });
    const named = (email: string) => identify({ 'str::email': email, 'str::first': 'Ann' });

    // The platform takes a track and an identify of each shape while the guard is open.
    expect((await post(key, [signedUp(emailFor('first')), named(emailFor('named'))], '198.51.100.1')).map((r) => r.status)).toEqual(['accepted', 'accepted']);
    await drained(outbox, 60_000);
    expect(await taken('activities/create')).toContain(emailFor('first'));

    // Refusals drawn by many visitors close the site's guard in every isolate.
    const now = Date.now();
    const refusals = durableRefusals(env['RELAY_STATE']);
    for (let i = 0; i < 30; i++) await chargeDelivered(refusals, [{ site: key, visitor: visitorKey(key, `203.0.113.${i}`) }], true, now);
    expect(await siteGuardWait(refusals, key, now)).toBeGreaterThan(0);

    const results = await post(
      key,
      [
        signedUp(emailFor('second')),
        named(emailFor('other')),
        track('act:cm:signed-up', { 'str::email': emailFor('third') }),
        identify({ 'str::email': emailFor('fourth'), 'str::last': 'Smith' }),
      ],
      '198.51.100.2',
    );
    expect(results.map((result) => result.status)).toEqual(['accepted', 'accepted', 'retry', 'retry']);
    expect(results.slice(2).map((result) => result.error)).toEqual([GUARD_RETRY, GUARD_RETRY]);
    await drained(outbox, 60_000);
    expect(await taken('activities/create')).toContain(emailFor('second'));
    expect(await taken('person/merge')).toContain(emailFor('other'));
    const sent = [...(await taken('activities/create')), ...(await taken('person/merge'))];
    expect(sent).not.toContain(emailFor('third'));
    expect(sent).not.toContain(emailFor('fourth'));
  }, 90_000);
});

describe('what knowing shapes costs on Workers', () => {
  /** Calls served by the object holding `site`'s refusal bucket (and its shapes). */
  const calls = async (site: string) => {
    const namespace = env['RELAY_STATE'];
    const object = namespace.get(namespace.idFromName(`refusals#${hash(refusalKey(guardKey(site))) % REFUSAL_OBJECTS}`));
    return ((await object.usage()) as { calls: number }).calls;
  };

  it('a shape is taught once per outbox isolate, and an isolate asks about a shape at most once a second', async () => {
    const site = siteKey('cost');
    const entry = (email: string) => ({
      site,
      id: crypto.randomUUID(),
      kind: 'activity' as const,
      entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': email } },
      browser: 'b',
      visitor: 'v',
      accepted: Date.now(),
    });
    const now = Date.now();
    const start = await calls(site);
    await teachShapes(env['RELAY_STATE'], [entry('a@example.com'), entry('b@example.com')], now);
    await teachShapes(env['RELAY_STATE'], [entry('c@example.com')], now + 1_000);
    expect(await calls(site)).toBe(start + 1);

    const shapes = durableShapes(env['RELAY_STATE']);
    const shape = entryShape(entry('d@example.com'));
    await shapes.recall!(site, [shape, 'act:cm:other\u0000\u0001'], now);
    expect(shapes.known(site, shape, now)).toBe(true);
    expect(shapes.known(site, 'act:cm:other\u0000\u0001', now)).toBe(false);
    await shapes.recall!(site, [shape, 'act:cm:other\u0000\u0001'], now + 500);
    expect(await calls(site)).toBe(start + 2);
    await shapes.recall!(site, [shape, 'act:cm:other\u0000\u0001'], now + 1_500);
    expect(await calls(site)).toBe(start + 3);
  });
});
