// What only the Worker entry does: request.cf → location.custom, CF-Connecting-IP, a
// misconfiguration answered in the error shape, and the optional Queues path (producer in
// /collect, consumer with ack/retry and a dead-letter queue).
import { createExecutionContext, createMessageBatch, env, getQueueResult, SELF } from 'cloudflare:test';
import { describe, expect, it, vi } from 'vitest';
import type { CollectAnswer } from '../../src/api/collect.js';
import type { RelayErrorBody } from '../../src/api/errors.js';
import worker from '../../src/relay/cloudflare.js';
import { MISCONFIGURED } from '../../src/relay/core/errors.js';
import { upstreamControl } from '../relay/support/control.js';
import { withinOneWindow } from '../relay/support/fair-limits.js';
import { API_KEY, ORIGIN, siteKey, sites, track, identify } from '../relay/suite/target.js';
import { createShardedOutbox } from '../../src/relay/workers/outbox.js';
import { DEFAULT_SHARDS } from '../../src/relay/workers/state.js';
import { CF, CF_CUSTOM, drained, queuedItem, queueSettled, VISITOR_IP } from './target.js';

const upstream = upstreamControl(env['TEST_UPSTREAM'] as string);
const outbox = createShardedOutbox(env['RELAY_OUTBOX'], DEFAULT_SHARDS);
/** This file's emails, `name-tag@example.com`: no other file's items share them. */
const tag = crypto.randomUUID().slice(0, 8);
const emailFor = (name: string) => `${name}-${tag}@example.com`;
/** The calls naming `email` the platform received once the outbox objects delivered everything (this file's own, not another's sharing the upstream). */
const calls = async (email: string) => {
  await drained(outbox);
  return (await upstream.received()).filter((call) => call.path.startsWith('/v1/') && JSON.stringify(call.body).includes(email));
};

function post(vars: Record<string, unknown>, body: unknown, cf: unknown = CF, headers: Record<string, string> = {}) {
  const request = new Request('https://relay.example.com/collect', {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': VISITOR_IP, ...headers },
    body: JSON.stringify(body),
    cf,
  } as RequestInit);
  return worker.fetch(request, { ...env, ...vars } as never, createExecutionContext());
}

describe('the Worker entry', () => {
  it('fills location.custom from request.cf when the item has none, and source_ip from CF-Connecting-IP', async () => {
    const key = siteKey('cf');
    await drained(outbox);
    await upstream.reset();
    const bare = track('act:cm:viewed', { 'str::email': emailFor('cf1') });
    const own = track('act:cm:viewed', { 'str::email': emailFor('cf2') }, { location: { custom: { city_name: 'Lyon' } } });
    const response = await post({ RELAY_SITES: sites({ key, origins: [ORIGIN], verify: 'off' }) }, { key, batch: [bare, own] });
    expect(((await response.json()) as CollectAnswer).results.map((r) => r.status)).toEqual(['accepted', 'accepted']);
    const [call] = await calls(emailFor('cf1'));
    expect(call!.body.activities.map((a: { location: unknown }) => a.location)).toEqual([
      { source_ip: VISITOR_IP, custom: CF_CUSTOM },
      { source_ip: VISITOR_IP, custom: { city_name: 'Lyon' } },
    ]);
  });

  it("ignores X-Forwarded-For and a browser-sent source_ip: the address is Cloudflare's CF-Connecting-IP", async () => {
    const key = siteKey('xff');
    await drained(outbox);
    await upstream.reset();
    const item = track('act:cm:viewed', { 'str::email': emailFor('xff') }, { location: { source_ip: '6.6.6.6' } });
    const response = await post({ RELAY_SITES: sites({ key, origins: [ORIGIN], verify: 'off' }) }, { key, batch: [item] }, CF, {
      'x-forwarded-for': '198.51.100.1',
    });
    expect(((await response.json()) as CollectAnswer).results[0]!.status).toBe('accepted');
    const [call] = await calls(emailFor('xff'));
    expect(call!.body.activities[0].location.source_ip).toBe(VISITOR_IP);
  });

  it('answers a misconfiguration with a fixed message, and logs the variable at fault', async () => {
    const lines: string[] = [];
    const spy = vi.spyOn(console, 'log').mockImplementation((line: unknown) => void lines.push(String(line)));
    let text: string;
    try {
      // a config error quotes what it could not read: here an internal origin and a token hash
      const response = await post(
        {
          RELAY_SITES: '[{"key":"pk_x","origins":["https://intranet.corp.example/secret-path"]}]',
          RELAY_TOKENS: '[{"name":"n","sha256":"abc"}]',
          RELAY_LOG: 'info',
        },
        { key: 'pk', batch: [] },
      );
      expect(response.status).toBe(500);
      text = await response.text();
    } finally {
      spy.mockRestore();
    }
    expect(JSON.parse(text)).toEqual({ error: { code: 'relay_misconfigured', message: MISCONFIGURED, details: [] } });
    for (const fragment of [API_KEY, 'intranet', 'secret-path', 'RELAY_SITES', 'abc']) expect(text).not.toContain(fragment);
    const logged = lines.map((line) => JSON.parse(line) as { kind?: string; error?: string; message?: string }).find((line) => line.kind === 'config');
    expect(logged?.error).toBe('RELAY_SITES');
    expect(logged?.message).toContain('RELAY_SITES');
  });

  it('limits each visitor with the Rate Limiting binding, answering 429 with its period as Retry-After', async () => {
    const key = siteKey('ratelimit');
    const vars = { RELAY_SITES: sites({ key, origins: [ORIGIN] }), RELAY_RATE_LIMIT: env['TEST_RATE_LIMIT'] };
    const statuses: number[] = [];
    // Its count is kept in 10 s windows of the wall clock: these five requests within one.
    await withinOneWindow(10_000, 5_000);
    for (let i = 0; i < 4; i++) statuses.push((await post(vars, { key, batch: [] }, CF, { 'cf-connecting-ip': '203.0.113.77' })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const refused = await post(vars, { key, batch: [] }, CF, { 'cf-connecting-ip': '203.0.113.77' });
    expect(refused.headers.get('retry-after')).toBe('10');
    expect(((await refused.json()) as RelayErrorBody).error.code).toBe('rate_limited');
    // Another visitor of the same site is not held back.
    expect((await post(vars, { key, batch: [] }, CF, { 'cf-connecting-ip': '203.0.113.78' })).status).toBe(200);
  });

  it('serves /healthz through the deployed entry (SELF)', async () => {
    const response = await SELF.fetch('https://relay.example.com/healthz');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
  });

  describe('with a queue bound', () => {
    it('answers accepted once the queue holds the items; the consumer puts them into the outbox, which delivers identify first, once', async () => {
      await drained(outbox);
      await upstream.reset();
      const i = identify({ 'str::email': emailFor('queued') });
      const t = track('act:cm:viewed', { 'str::email': emailFor('queued') });
      const response = await post({ RELAY_QUEUE: env['TEST_QUEUE'] }, { key: 'pk_queue', batch: [t, i] });
      expect(((await response.json()) as CollectAnswer).results).toEqual([
        { id: t.id, status: 'accepted' },
        { id: i.id, status: 'accepted' },
      ]);
      // The consumer runs on its own schedule: wait for it, boundedly.
      let received = await calls(emailFor('queued'));
      for (let attempt = 0; attempt < 100 && received.length < 2; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        received = await calls(emailFor('queued'));
      }
      expect(received.map((call) => call.path)).toEqual(['/v1/person/merge', '/v1/activities/create']);
      expect(received[1]!.body.activities[0]).toMatchObject({ fields: { 'str::email': emailFor('queued') }, location: { source_ip: VISITOR_IP } });
      // A repeat is queued again without a state call; the outbox finds it remembered.
      const again = await post({ RELAY_QUEUE: env['TEST_QUEUE'] }, { key: 'pk_queue', batch: [t] });
      expect(((await again.json()) as CollectAnswer).results[0]!.status).toBe('accepted');
      await queueSettled(upstream);
      const tracks = (await calls(emailFor('queued'))).filter((call) => call.path === '/v1/activities/create');
      expect(
        tracks.filter((call) => call.body.activities.some((a: { fields: Record<string, string> }) => a.fields['str::email'] === emailFor('queued'))),
      ).toHaveLength(1);
    });

    it('consumer: a redelivered message is acked, and its item reaches the platform once', async () => {
      await drained(outbox);
      await upstream.reset();
      const id = crypto.randomUUID();
      const message = { id: `msg-${id}`, timestamp: Date.now(), attempts: 1, body: queuedItem(id, emailFor('redelivered')) };
      for (const attempt of [1, 2]) {
        const batch = createMessageBatch('relay-test-events', [{ ...message, attempts: attempt }]);
        const ctx = createExecutionContext();
        await worker.queue(batch, env as never);
        const result = await getQueueResult(batch, ctx);
        expect(result.ackAll || result.explicitAcks.includes(message.id)).toBe(true);
        expect(result.retryMessages).toEqual([]);
      }
      expect((await calls(emailFor('redelivered'))).filter((call) => call.path === '/v1/activities/create')).toHaveLength(1);
    });

    it('consumer: acks a batch while the platform is down (nothing waits in the queue on the platform); the outbox delivers it after', async () => {
      await drained(outbox);
      await upstream.reset();
      await upstream.always({ status: 503 });
      const batch = createMessageBatch('relay-test-events', [
        { id: 'd1', timestamp: Date.now(), attempts: 1, body: queuedItem(crypto.randomUUID(), emailFor('down')) },
      ]);
      const ctx = createExecutionContext();
      try {
        await worker.queue(batch, env as never);
        const result = await getQueueResult(batch, ctx);
        expect(result.ackAll || result.explicitAcks.includes('d1')).toBe(true);
        expect(result.retryMessages).toEqual([]);
        expect((await outbox.stats()).pending).toBe(1);
      } finally {
        await upstream.always(undefined);
      }
      const sent = (await calls(emailFor('down'))).filter((call) => call.path === '/v1/activities/create' && call.status === 200);
      expect(sent.flatMap((call) => call.body.activities.map((a: { fields: Record<string, string> }) => a.fields['str::email']))).toEqual([emailFor('down')]);
    });
  });
});

describe('the snippet on Workers', () => {
  it('serves cdp.js from the ASSETS binding at /cdp.js and at the alias, with long cache headers', async () => {
    const vars = { RELAY_SCRIPT_PATH: '/js/app.js' };
    for (const path of ['/cdp.js', '/js/app.js']) {
      const response = await worker.fetch(new Request(`https://relay.example.com${path}`), { ...env, ...vars } as never, createExecutionContext());
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('window.cdp = window.cdp ||');
      expect(response.headers.get('content-type')).toContain('javascript');
      expect(response.headers.get('cache-control')).toMatch(/public, max-age=\d{6,}/);
      expect(response.headers.get('etag')).toMatch(/^"[0-9a-f]+"$/);
    }
  });

  it('answers 404 in the error shape when no ASSETS binding holds cdp.js', async () => {
    const response = await worker.fetch(new Request('https://relay.example.com/cdp.js'), { ...env, ASSETS: undefined } as never, createExecutionContext());
    expect(response.status).toBe(404);
    expect(((await response.json()) as RelayErrorBody).error.code).toBe('snippet_not_built');
  });
});
