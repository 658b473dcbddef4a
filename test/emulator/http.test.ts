import { describe, expect, it } from 'vitest';
import { createClient, HTTPError, RateLimitError } from '../../src/client/index.js';
import { createEmulator } from '../../src/emulator/index.js';
import { KEY, rejection, useEmulator } from './helpers.js';

const h = useEmulator();

describe('HTTP surface', () => {
  it('checks X-Api-Key: missing or wrong is a 401 in the general error shape', async () => {
    for (const headers of [{ 'X-Api-Key': 'wrong' }, { 'X-Api-Key': '' }]) {
      const res = await h.call('/v1/tags/get', {}, { headers });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ request_id: expect.any(String), code: 401, error: expect.stringContaining('X-Api-Key') });
    }
    const bare = await fetch(`${h.running.url}/v1/tags/get`, { method: 'POST' });
    expect(bare.status).toBe(401);
    expect((await h.call('/_emulator/state', undefined, { method: 'GET', headers: { 'X-Api-Key': 'wrong' } })).status).toBe(401);
  });

  it('answers a key sent to another region’s address with 401', async () => {
    const emulator = createEmulator({ key: KEY, region: 'eu' });
    const call = (base: string) => emulator.fetch(new Request(`${base}/v1/tags/get`, { method: 'POST', headers: { 'X-Api-Key': KEY } }));
    expect((await call('https://api.au.ap3api.com')).status).toBe(401);
    expect((await call('https://api.eu.ap3api.com')).status).toBe(200);
  });

  it('unknown paths and methods are 404 Unknown endpoint or method', async () => {
    for (const [path, method] of [
      ['/v1/person/list', 'POST'],
      ['/v1/person/get', 'GET'],
      ['/v1/person/delete', 'POST'],
      ['/v1/person/get/', 'POST'],
      ['/v2/person/get', 'POST'],
    ] as const) {
      const res = await h.call(path, method === 'GET' ? undefined : {}, { method });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body).toMatchObject({ code: 404, error: 'Unknown endpoint or method' });
    }
  });

  it('needs application/json for a body, refuses malformed JSON and bodies over 2 MB', async () => {
    const text = await h.call('/v1/tags/get', '{}', { headers: { 'Content-Type': 'text/plain' } });
    expect(text.status).toBe(400);
    expect(text.body.error).toContain('Content-Type');
    const malformed = await h.call('/v1/person/merge', '{"people": [');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toContain('Malformed JSON');
    const big = await h.call('/v1/person/merge', { people: [{ fields: { 'str::email': 'a@example.com' }, padding: 'x'.repeat(2 * 1024 * 1024) }] });
    expect(big.status).toBe(400);
    expect(big.body.error).toContain('2 MB');
    // a body-less call is taken as {}
    const empty = await fetch(`${h.running.url}/v1/person/custom-field/get`, { method: 'POST', headers: { 'X-Api-Key': KEY } });
    expect(await empty.json()).toEqual({ fields: [] });
  });

  it('every answer is JSON with Access-Control-Allow-Origin: *', async () => {
    for (const res of [await h.call('/v1/tags/get', {}), await h.call('/v1/nope', {}), await h.call('/v1/tags/get', {}, { headers: { 'X-Api-Key': 'x' } })]) {
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
    }
  });

  it('answers a CORS preflight without a key', async () => {
    const res = await fetch(`${h.running.url}/v1/person/merge`, {
      method: 'OPTIONS',
      headers: { Origin: 'http://site.test', 'Access-Control-Request-Method': 'POST' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-headers')).toContain('X-Api-Key');
  });

  it('serves every endpoint of ENDPOINT_LIST (none answers 404)', async () => {
    const { ENDPOINT_LIST } = await import('../../src/api/index.js');
    expect(ENDPOINT_LIST).toHaveLength(29);
    for (const endpoint of ENDPOINT_LIST) {
      const res = await h.call(endpoint.path, {}, { method: endpoint.method });
      expect(res.status, endpoint.id).not.toBe(404);
      expect(typeof res.body, endpoint.id).toBe('object');
    }
  });

  it('exposes the state and a reset under /_emulator', async () => {
    await h.client.person.merge({ people: [{ fields: { 'str::email': 's@example.com' } }] });
    const state = await h.call('/_emulator/state', undefined, { method: 'GET' });
    expect(state.body.people).toHaveLength(1);
    expect(state.body.people[0].fields['str::email']).toBe('s@example.com');
    expect((await h.call('/_emulator/reset', {})).status).toBe(200);
    expect(h.running.emulator.state.people.size).toBe(0);
  });

  it('renders a dashboard that escapes user data and refreshes itself', async () => {
    await h.client.person.merge({
      people: [{ fields: { 'str::email': 'x@example.com', 'str::first': '<script>alert(1)</script>' }, tags: ['"><img src=x>'] }],
    });
    const res = await fetch(`${h.running.url}/`);
    expect(res.headers.get('content-type')).toContain('text/html');
    const html = await res.text();
    expect(html).toContain('http-equiv="refresh"');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain('<script>alert(1)');
    expect(html).not.toContain('"><img');
    expect(html).toContain('x@example.com');
  });
});

describe('rate limit and faults (the runtime-neutral core, through the client)', () => {
  const clientFor = (emulator: ReturnType<typeof createEmulator>) =>
    createClient({
      apiKey: KEY,
      baseUrl: 'http://emulator.test',
      retry: false,
      fetch: (input, init) => emulator.fetch(new Request(input as RequestInfo, init)),
    });

  it('answers 429 with the try-in-seconds body once the per-second budget is used', async () => {
    let clock = 10_000;
    const emulator = createEmulator({ key: KEY, rateLimit: 3, now: () => clock });
    const client = clientFor(emulator);
    for (let i = 0; i < 3; i++) await client.tags.get();
    const error = await rejection(client.tags.get());
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error.tryInSeconds).toBe(1);
    expect(error.body).toEqual({ error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 1 } });
    clock += 1000;
    expect(await client.tags.get()).toEqual([]);
  });

  it('shuts the caller out for 15 s after 15 bad requests within 15 s (only when rate limiting)', async () => {
    let clock = 50_000;
    const emulator = createEmulator({ key: KEY, rateLimit: 1000, now: () => clock });
    const send = (key: string) => emulator.fetch(new Request('http://e/v1/tags/get', { method: 'POST', headers: { 'X-Api-Key': key } }));
    for (let i = 0; i < 14; i++) expect((await send('bad')).status).toBe(401);
    expect((await send(KEY)).status).toBe(200);
    expect((await send('bad')).status).toBe(401);
    const banned = await send(KEY);
    expect(banned.status).toBe(429);
    expect(await banned.json()).toEqual({ error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 15 } });
    clock += 15_000;
    expect((await send(KEY)).status).toBe(200);
    const unlimited = createEmulator({ key: KEY });
    for (let i = 0; i < 20; i++) await unlimited.fetch(new Request('http://e/v1/tags/get', { method: 'POST' }));
    expect((await unlimited.fetch(new Request('http://e/v1/tags/get', { method: 'POST', headers: { 'X-Api-Key': KEY } }))).status).toBe(200);
  });

  it('uses the plan rate for rateLimit: true (10 professional)', async () => {
    const emulator = createEmulator({ key: KEY, rateLimit: true, plan: 'professional', now: () => 5_000 });
    const statuses = [];
    for (let i = 0; i < 11; i++)
      statuses.push((await emulator.fetch(new Request('http://e/v1/tags/get', { method: 'POST', headers: { 'X-Api-Key': KEY } }))).status);
    expect(statuses).toEqual([...Array(10).fill(200), 429]);
  });

  it('fails endpoints on purpose at the configured rate, and can change faults at run time', async () => {
    let n = 0;
    const randoms = [0.1, 0.9, 0.1, 0.9];
    const emulator = createEmulator({ key: KEY, faults: { 'person/merge': { status: 503, rate: 0.5 } }, random: () => randoms[n++ % randoms.length]! });
    const client = clientFor(emulator);
    const merge = () => client.person.merge({ people: [{ fields: { 'str::email': 'f@example.com' } }] });
    const error = await rejection(merge());
    expect(error).toBeInstanceOf(HTTPError);
    expect(error.status).toBe(503);
    expect(error.body).toMatchObject({ code: 503, error: expect.stringContaining('person/merge') });
    expect((await merge()).people![0]!.status).toBe('created');
    expect(await client.tags.get()).toEqual([]);
    emulator.setFaults({ '*': { status: 500 } });
    expect((await rejection(client.tags.get())).status).toBe(500);
    emulator.setFaults({});
    expect(await client.tags.get()).toEqual([]);
  });

  it('takes faults over HTTP at PUT /_emulator/faults, refusing a bad table', async () => {
    expect((await h.call('/_emulator/faults', { 'tags/get': { status: 429 } }, { method: 'PUT' })).status).toBe(200);
    const limited = await rejection(h.client.tags.get());
    expect(limited).toBeInstanceOf(RateLimitError);
    expect((await h.call('/_emulator/faults', { 'tags/get': { status: 200 } }, { method: 'PUT' })).status).toBe(400);
    await h.call('/_emulator/faults', {}, { method: 'PUT' });
    expect(await h.client.tags.get()).toEqual([]);
  });

  it('latencyMs: a call is applied and answered after that long; a call over the budget is refused at once', async () => {
    const emulator = createEmulator({ key: KEY, latencyMs: 150, rateLimit: 1 });
    const merge = () =>
      emulator.fetch(
        new Request('http://e/v1/person/merge', {
          method: 'POST',
          headers: { 'X-Api-Key': KEY, 'Content-Type': 'application/json' },
          body: JSON.stringify({ people: [{ fields: { 'str::email': 'slow@example.com' } }] }),
        }),
      );
    const started = Date.now();
    const pending = merge();
    // not applied while the platform is still "working" on it
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(emulator.state.people.size).toBe(0);
    expect((await pending).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(145);
    expect(Date.parse([...emulator.state.people.values()][0]!.created_at) - started).toBeGreaterThanOrEqual(145);
    const refusedAt = Date.now();
    expect((await merge()).status).toBe(429);
    expect(Date.now() - refusedAt).toBeLessThan(100);
  });

  it('counts every /v1 call with its answer, and the entries of the applied ones; reset clears the count', async () => {
    let clock = 20_000;
    const emulator = createEmulator({ key: KEY, rateLimit: 3, now: () => clock });
    const post = (path: string, body: unknown, key = KEY) =>
      emulator.fetch(
        new Request(`http://e/v1/${path}`, { method: 'POST', headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify(body) }),
      );
    const people = (n: number) => ({ people: Array.from({ length: n }, (_, i) => ({ fields: { 'str::email': `c${i}@example.com` } })) });
    expect((await post('person/merge', people(3))).status).toBe(200);
    expect((await post('person/merge', people(2))).status).toBe(200);
    expect((await post('tags/get', {}, 'wrong')).status).toBe(401);
    expect((await post('person/merge', people(4))).status).toBe(429);
    clock += 1000;
    expect((await post('person/merge', { people: [{ fields: {} }] })).status).toBe(400);
    const counted = {
      'person/merge': { calls: 4, statuses: { 200: 2, 429: 1, 400: 1 }, entries: 5 },
      'tags/get': { calls: 1, statuses: { 401: 1 }, entries: 0 },
    };
    expect(emulator.calls()).toEqual(counted);
    const http = await emulator.fetch(new Request('http://e/_emulator/calls', { headers: { 'X-Api-Key': KEY } }));
    expect(await http.json()).toEqual({ endpoints: counted });
    // the hook itself and unknown paths are not platform calls
    expect(emulator.calls()).toEqual(counted);
    emulator.reset();
    expect(emulator.calls()).toEqual({});
  });

  it('refuses bad options with errors naming the option', () => {
    expect(() => createEmulator({ key: '' })).toThrow(/key/);
    expect(() => createEmulator({ region: 'mars' as 'eu' })).toThrow(/region/);
    expect(() => createEmulator({ plan: 'free' as 'business' })).toThrow(/plan/);
    expect(() => createEmulator({ rateLimit: -1 })).toThrow(/rateLimit/);
    expect(() => createEmulator({ latencyMs: -5 })).toThrow(/latencyMs/);
    expect(() => createEmulator({ faults: { x: { status: 200 } } })).toThrow(/status/);
  });
});
