/**
 * Workers Analytics Engine (src/relay/workers/analytics.ts): exactly which data points the
 * observer writes for given events, and the Worker entry with an ANALYTICS binding. Miniflare's
 * local dataset (bound here as TEST_ANALYTICS) takes points and keeps none, so the entry tests
 * wrap it: every point still reaches the real binding, and the wrapper records what went by.
 * Also: the Worker's log lines follow RELAY_LOG, the queue consumer's included.
 */
import { createExecutionContext, createMessageBatch, env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CollectAnswer } from '../../src/api/collect.js';
import worker from '../../src/relay/cloudflare.js';
import type { CollectEvent } from '../../src/relay/core/observe.js';
import { createToken } from '../../src/relay/core/tokens.js';
import { analyticsObserver, clip, COLLECT_DOUBLES } from '../../src/relay/workers/analytics.js';
import { upstreamControl } from '../relay/support/control.js';
import { API_KEY, ORIGIN, siteKey, sites, track } from '../relay/suite/target.js';
import { CF, VISITOR_IP } from './target.js';

/** What the adapter relies on: `writeDataPoint(point)`, nothing else. */
interface DataPoint {
  indexes?: unknown[];
  blobs?: unknown[];
  doubles?: number[];
}
interface Dataset {
  writeDataPoint(point?: DataPoint): void;
}

/** A dataset that records each point, then hands it to `next` (the real binding) when there is one. */
function recording(next?: Dataset) {
  const points: DataPoint[] = [];
  const dataset: Dataset = {
    writeDataPoint(point) {
      points.push(structuredClone(point!));
      next?.writeDataPoint(point);
    },
  };
  return { dataset, points };
}

const upstream = upstreamControl(env['TEST_UPSTREAM'] as string);

function post(vars: Record<string, unknown>, body: unknown) {
  const request = new Request('https://relay.example.com/collect', {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': VISITOR_IP },
    body: JSON.stringify(body),
    cf: CF,
  } as RequestInit);
  return worker.fetch(request, { ...env, ...vars } as never, createExecutionContext());
}

const collectEvent = (over: Partial<CollectEvent> = {}): CollectEvent => ({
  at: 0,
  site: 'shop',
  status: 200,
  ms: 12,
  items: [],
  unverified: 0,
  ...over,
});

describe('analyticsObserver: the data points', () => {
  it('writes one collect point per /collect answer: site as index, counts per result and rejection class', () => {
    const { dataset, points } = recording();
    analyticsObserver(dataset as never).collect(
      collectEvent({
        ms: 37,
        unverified: 1,
        items: [
          { id: 'a', status: 'accepted' },
          { id: 'b', status: 'accepted' },
          { id: 'c', status: 'duplicate' },
          { id: 'd', status: 'rejected', reason: 'invalid', error: 'bad ts' },
          { id: 'e', status: 'rejected', reason: 'not_allowed' },
          { id: 'f', status: 'rejected', reason: 'not_allowed' },
          { id: 'g', status: 'rejected', reason: 'unverified' },
          { id: 'h', status: 'rejected', reason: 'platform' },
          { id: 'i', status: 'retry', error: 'platform_unavailable' },
          { id: 'j', status: 'rejected', reason: 'expired' },
          { id: 'k', status: 'rejected', reason: 'suppressed' },
        ],
      }),
    );
    expect(COLLECT_DOUBLES).toEqual([
      'items',
      'accepted',
      'duplicate',
      'rejected',
      'retry',
      'rejected_invalid',
      'rejected_not_allowed',
      'rejected_unverified',
      'rejected_platform',
      'identity_failed',
      'rejected_expired',
      'rejected_suppressed',
    ]);
    expect(points).toEqual([
      {
        indexes: ['shop'],
        blobs: ['collect', 'shop', '200', ''],
        // event, ms, status | items, accepted, duplicate, rejected, retry | invalid, not_allowed, unverified, platform | identity failed | expired | suppressed
        doubles: [1, 37, 200, 11, 2, 1, 7, 1, 1, 2, 1, 1, 1, 1, 1],
      },
    ]);
  });

  it('writes a request that failed as a whole with its error code, and one whose key named no site as (unknown)', () => {
    const { dataset, points } = recording();
    const observer = analyticsObserver(dataset as never);
    observer.collect(collectEvent({ status: 429, error: 'rate_limited', ms: 1 }));
    observer.collect(collectEvent({ site: undefined, status: 403, error: 'unknown_key', ms: 2 }));
    expect(points).toEqual([
      { indexes: ['shop'], blobs: ['collect', 'shop', '429', 'rate_limited'], doubles: [1, 1, 429, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] },
      { indexes: ['(unknown)'], blobs: ['collect', '(unknown)', '403', 'unknown_key'], doubles: [1, 2, 403, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] },
    ]);
  });

  it('writes one proxy point per proxy call (token name, endpoint) and one upstream point per platform call', () => {
    const { dataset, points } = recording();
    const observer = analyticsObserver(dataset as never);
    observer.proxy({
      ts: '',
      kind: 'proxy',
      method: 'POST',
      path: '/v1/person/merge',
      status: 200,
      ms: 45,
      token: 'crm-sync',
      endpoint: 'person/merge',
      upstream_calls: 1,
    });
    observer.proxy({
      ts: '',
      kind: 'proxy',
      method: 'GET',
      path: '/v1/*',
      status: 401,
      ms: 1,
      token: null,
      endpoint: null,
      upstream_calls: 0,
      error: 'unauthorized',
    });
    observer.upstream({ endpoint: 'activities/create', status: 202, ms: 80 });
    observer.upstream({ endpoint: 'activities/create', status: 0, ms: 10_000 });
    expect(points).toEqual([
      { indexes: ['crm-sync'], blobs: ['proxy', 'crm-sync', '200', 'person/merge'], doubles: [1, 45, 200] },
      { indexes: ['(none)'], blobs: ['proxy', '(none)', '401', '(none)'], doubles: [1, 1, 401] },
      { indexes: ['activities/create'], blobs: ['upstream', 'activities/create', '202'], doubles: [1, 80, 202] },
      { indexes: ['activities/create'], blobs: ['upstream', 'activities/create', '0'], doubles: [1, 10_000, 0] },
    ]);
  });

  it('cuts an index to 96 bytes at a character boundary; the blob keeps the whole name', () => {
    expect(clip('shop')).toBe('shop');
    expect(clip('é'.repeat(60))).toBe('é'.repeat(48));
    expect(clip(`${'a'.repeat(95)}é`)).toBe('a'.repeat(95));
    const { dataset, points } = recording();
    const long = `site-${'ü'.repeat(100)}`;
    analyticsObserver(dataset as never).collect(collectEvent({ site: long }));
    expect(new TextEncoder().encode(points[0]!.indexes![0] as string).length).toBeLessThanOrEqual(96);
    expect(points[0]!.blobs![1]).toBe(long);
  });

  it('never fails the caller when the dataset throws, and reports it once', () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const observer = analyticsObserver({
        writeDataPoint() {
          throw new Error('boom');
        },
      } as never);
      expect(() => observer.collect(collectEvent())).not.toThrow();
      expect(() =>
        observer.proxy({ ts: '', kind: 'proxy', method: 'GET', path: '/v1/*', status: 404, ms: 0, token: null, endpoint: null, upstream_calls: 0 }),
      ).not.toThrow();
      expect(() => observer.upstream({ endpoint: 'person/merge', status: 200, ms: 3 })).not.toThrow();
      expect(error).toHaveBeenCalledTimes(1);
      expect(JSON.parse(error.mock.calls[0]![0] as string)).toMatchObject({ level: 'error', kind: 'error', error: 'analytics_write_failed' });
    } finally {
      error.mockRestore();
    }
  });
});

describe('the Worker entry with an ANALYTICS binding', () => {
  it('runs with miniflare’s Analytics Engine binding bound: /collect answers as without it', async () => {
    expect(typeof env['TEST_ANALYTICS']?.writeDataPoint).toBe('function');
    const key = siteKey('ae-bound');
    await upstream.reset();
    const response = await post(
      { RELAY_SITES: sites({ key, name: 'shop-bound', origins: [ORIGIN] }), ANALYTICS: env['TEST_ANALYTICS'] },
      { key, batch: [track('act:cm:viewed', { 'str::email': 'ae1@example.com' })] },
    );
    expect(response.status).toBe(200);
    expect(((await response.json()) as CollectAnswer).results.map((r) => r.status)).toEqual(['accepted']);
  });

  it('writes a collect point per request through to the real binding (platform calls are the outbox objects’), never a key or an email', async () => {
    const key = siteKey('ae-points');
    const { dataset, points } = recording(env['TEST_ANALYTICS']);
    const vars = {
      RELAY_SITES: sites({ key, name: 'shop-points', origins: [ORIGIN], activities: ['act:cm:viewed'], verify: 'off' }),
      ANALYTICS: dataset,
    };
    await upstream.reset();
    const first = track('act:cm:viewed', { 'str::email': 'ae2@example.com' });
    const response = await post(vars, { key, batch: [first, track('act:cm:other', { 'str::email': 'ae3@example.com' })] });
    expect(((await response.json()) as CollectAnswer).results.map((r) => r.status)).toEqual(['accepted', 'rejected']);
    const again = await post(vars, { key, batch: [first] });
    expect(((await again.json()) as CollectAnswer).results.map((r) => r.status)).toEqual(['duplicate']);

    const collects = points.filter((point) => point.blobs![0] === 'collect');
    expect(collects).toEqual([
      {
        indexes: ['shop-points'],
        blobs: ['collect', 'shop-points', '200', ''],
        doubles: [1, expect.any(Number), 200, 2, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0],
      },
      {
        indexes: ['shop-points'],
        blobs: ['collect', 'shop-points', '200', ''],
        doubles: [1, expect.any(Number), 200, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      },
    ]);
    // The request makes no platform call: an outbox object delivers later, and writes its own points.
    expect(points).toHaveLength(2);
    const text = JSON.stringify(points);
    for (const secret of [key, API_KEY, 'ae2@example.com', 'ae3@example.com']) expect(text).not.toContain(secret);
  });

  it('writes a proxy point with the token’s name, never the token', async () => {
    const { token, entry } = await createToken({ name: 'ae-reader', scopes: ['read'] });
    const { dataset, points } = recording(env['TEST_ANALYTICS']);
    const vars = { ...env, RELAY_TOKENS: JSON.stringify([entry]), ANALYTICS: dataset };
    const send = (authorization?: string) =>
      worker.fetch(
        new Request('https://relay.example.com/v1/tags/get', {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
          body: '{}',
        }),
        vars as never,
        createExecutionContext(),
      );
    await upstream.reset();
    const ok = await send(`Bearer ${token}`);
    const refused = await send();
    expect(refused.status).toBe(401);
    const proxies = points.filter((point) => point.blobs![0] === 'proxy');
    expect(proxies).toEqual([
      { indexes: ['ae-reader'], blobs: ['proxy', 'ae-reader', String(ok.status), 'tags/get'], doubles: [1, expect.any(Number), ok.status] },
      { indexes: ['(none)'], blobs: ['proxy', '(none)', '401', 'tags/get'], doubles: [1, expect.any(Number), 401] },
    ]);
    expect(JSON.stringify(points)).not.toContain(token);
  });

  it('answers /collect when the dataset throws on every write', async () => {
    const key = siteKey('ae-throws');
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const broken = {
        writeDataPoint() {
          throw new TypeError('binding gone');
        },
      };
      const response = await post(
        { RELAY_SITES: sites({ key, name: 'shop-throws', origins: [ORIGIN] }), ANALYTICS: broken },
        { key, batch: [track('act:cm:viewed', { 'str::email': 'ae4@example.com' })] },
      );
      expect(response.status).toBe(200);
      expect(((await response.json()) as CollectAnswer).results.map((r) => r.status)).toEqual(['accepted']);
    } finally {
      error.mockRestore();
    }
  });
});

describe('the Worker’s log lines follow RELAY_LOG', () => {
  const lines = (spy: { mock: { calls: unknown[][] } }) => spy.mock.calls.map((call) => JSON.parse(call[0] as string) as Record<string, unknown>);
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('off: no line; info: one line per request with level; debug: also one line per item', async () => {
    const counts: Record<string, Record<string, unknown>[]> = {};
    for (const level of ['off', 'info', 'debug']) {
      const log = vi.spyOn(console, 'log').mockImplementation(() => {});
      const key = siteKey(`log-${level}`);
      await post(
        { RELAY_LOG: level, RELAY_SITES: sites({ key, name: `shop-${level}`, origins: [ORIGIN] }) },
        { key, batch: [track('act:cm:viewed', { 'str::email': 'log@example.com' })] },
      );
      counts[level] = lines(log);
      log.mockRestore();
    }
    expect(counts['off']).toEqual([]);
    expect(counts['info']).toEqual([expect.objectContaining({ level: 'info', kind: 'collect', site: 'shop-info', status: 200 })]);
    expect(counts['debug']!.map((line) => [line['level'], line['kind']])).toEqual([
      ['info', 'collect'],
      ['debug', 'item'],
    ]);
    expect(JSON.stringify(counts)).not.toContain('log@example.com');
  });

  it('the queue consumer writes its line at RELAY_LOG too (off writes none)', async () => {
    const consume = async (level: string) => {
      const log = vi.spyOn(console, 'log').mockImplementation(() => {});
      const id = crypto.randomUUID();
      const batch = createMessageBatch('relay-test-events', [
        {
          id: `msg-${id}`,
          timestamp: Date.now(),
          attempts: 1,
          body: {
            site: 'pk_queue',
            id,
            kind: 'activity' as const,
            entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': 'q@example.com' } },
            browser: 'b',
            visitor: 'v',
            accepted: Date.now(),
          },
        },
      ]);
      await worker.queue(batch, { ...env, RELAY_LOG: level } as never);
      const written = lines(log);
      log.mockRestore();
      return written;
    };
    expect(await consume('off')).toEqual([]);
    expect(await consume('info')).toEqual([expect.objectContaining({ level: 'info', kind: 'queue' })]);
  });

  it('a misconfiguration writes an error line unless RELAY_LOG is off', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    expect((await post({ RELAY_SITES: '{broken', RELAY_LOG: 'info' }, { key: 'pk', batch: [] })).status).toBe(500);
    expect((await post({ RELAY_SITES: '{broken', RELAY_LOG: 'off' }, { key: 'pk', batch: [] })).status).toBe(500);
    expect(lines(log)).toEqual([expect.objectContaining({ level: 'error', kind: 'config', status: 500, error: 'RELAY_SITES' })]);
  });
});
