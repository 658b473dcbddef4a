/**
 * The proxy's conformance suite (Contract 2), written once and run against every target:
 * the proxy on Node over real HTTP (proxy.test.ts) and inside workerd (test/workerd/proxy.test.ts).
 * A target gets the tokens, the in-test platform, a logger and a clock, and answers requests.
 */
import { beforeAll, beforeEach, afterAll, describe, expect, it } from 'vitest';
import { ENDPOINT_LIST, validateRequest, type Endpoint, type EndpointId } from '../../src/api/index.js';
import type { AuditEntry } from '../../src/relay/proxy/index.js';
import { hashToken, type TokenConfig, type TokenScope } from '../../src/relay/tokens.js';
import { SAMPLE_BODIES } from '../fixtures/bodies.js';
import { createTestUpstream, type TestUpstream } from './proxy-upstream.js';

export interface TargetOptions {
  tokens: TokenConfig[];
  apiKey: string;
  /** the platform; a target reaches it over HTTP (Node) or by calling `upstream.fetch` (workerd) */
  upstream: TestUpstream;
  logger: (entry: AuditEntry) => void;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}

export interface Target {
  /** sends a request to the relay; `path` includes any query */
  request(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

export type MakeTarget = (options: TargetOptions) => Promise<Target>;

export const API_KEY = 'platform-secret-key-0123456789';

/** Plain tokens of the suite; the target only ever sees their hashes. */
export const TOKENS = {
  read: 'rt_read_token_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  write: 'rt_write_token_bbbbbbbbbbbbbbbbbbbbbbbbbbbbb',
  delete: 'rt_delete_token_ccccccccccccccccccccccccccc',
  admin: 'rt_admin_token_dddddddddddddddddddddddddddd',
  limited: 'rt_limited_token_eeeeeeeeeeeeeeeeeeeeeeeeee',
} as const;

async function tokenConfigs(): Promise<TokenConfig[]> {
  const entry = async (name: keyof typeof TOKENS, scopes: TokenScope[], endpoints?: EndpointId[]): Promise<TokenConfig> => {
    const token: TokenConfig = { name: `${name}-holder`, sha256: await hashToken(TOKENS[name]), scopes };
    if (endpoints) token.endpoints = endpoints;
    return token;
  };
  return Promise.all([
    entry('read', ['read']),
    entry('write', ['write']),
    entry('delete', ['delete']),
    entry('admin', ['admin']),
    entry('limited', ['read', 'write'], ['person/get', 'person/merge']),
  ]);
}

/** A token that has exactly the scope `endpoint` needs, and one that lacks it. */
const RIGHT: Record<Endpoint['scope'], keyof typeof TOKENS> = { read: 'read', write: 'write', delete: 'delete' };
const WRONG: Record<Endpoint['scope'], keyof typeof TOKENS> = { read: 'write', write: 'read', delete: 'write' };

const people = (count: number) =>
  Array.from({ length: count }, (_, index) => ({ fields: { 'str::email': `person${index}@example.com`, 'str::first': `P${index}` } }));

export function proxySuite(name: string, makeTarget: MakeTarget): void {
  describe(`relay proxy (${name})`, () => {
    const upstream = createTestUpstream();
    const audit: AuditEntry[] = [];
    let clock = Date.UTC(2026, 10, 23, 9, 0, 0);
    let target: Target;

    beforeAll(async () => {
      target = await makeTarget({
        tokens: await tokenConfigs(),
        apiKey: API_KEY,
        upstream,
        logger: (entry) => void audit.push(entry),
        now: () => clock,
        sleep: async (ms) => void (clock += ms),
      });
    });
    afterAll(() => target.close());
    beforeEach(() => {
      upstream.reset();
      audit.length = 0;
      // Past any hold a previous test left behind.
      clock += 3_600_000;
    });

    const call = (path: string, token: keyof typeof TOKENS | null, body?: unknown, init: RequestInit = {}) => {
      const headers = new Headers(init.headers);
      if (token !== null) headers.set('authorization', `Bearer ${TOKENS[token]}`);
      if (body !== undefined) headers.set('content-type', 'application/json');
      return target.request(path, { method: 'POST', ...init, headers, body: typeof body === 'string' ? body : body === undefined ? null : JSON.stringify(body) });
    };
    const send = (endpoint: Endpoint, token: keyof typeof TOKENS | null, body: unknown = SAMPLE_BODIES[endpoint.id as EndpointId], init: RequestInit = {}) =>
      call(endpoint.path, token, body, { method: endpoint.method, ...init });

    it('serves the 29 method+path pairs of the endpoint table, each with a valid sample body', () => {
      expect(ENDPOINT_LIST).toHaveLength(29);
      for (const endpoint of ENDPOINT_LIST) expect(validateRequest(endpoint.id, SAMPLE_BODIES[endpoint.id]).ok).toBe(true);
    });

    describe('each endpoint', () => {
      for (const endpoint of ENDPOINT_LIST) {
        it(`${endpoint.method} ${endpoint.path}: the ${endpoint.scope} scope forwards with the key swapped, other scopes get 403`, async () => {
          const response = await send(endpoint, RIGHT[endpoint.scope], undefined, {
            headers: {
              cookie: 'session=caller-cookie',
              'x-api-key': 'caller-supplied-key',
              'x-forwarded-for': '203.0.113.9',
              'x-forwarded-host': 'evil.example',
              'proxy-authorization': 'Basic Y2FsbGVy',
              te: 'trailers',
            },
          });
          expect(response.status).toBe(200);
          expect(response.headers.get('cache-control')).toBe('no-store');
          expect(response.headers.get('content-type')).toMatch(/^application\/json/);
          const answer = await response.json();
          expect(upstream.received).toHaveLength(1);
          const received = upstream.received[0]!;
          expect(received.method).toBe(endpoint.method);
          expect(received.path).toBe(endpoint.path);
          expect(received.search).toBe('');
          expect(received.body).toEqual(SAMPLE_BODIES[endpoint.id]);
          expect(received.headers['x-api-key']).toBe(API_KEY);
          for (const header of ['authorization', 'cookie', 'x-forwarded-for', 'x-forwarded-host', 'proxy-authorization', 'te']) {
            expect(received.headers[header], header).toBeUndefined();
          }
          const everything = JSON.stringify(received.headers);
          for (const secret of [...Object.values(TOKENS), 'caller-cookie', 'caller-supplied-key']) expect(everything).not.toContain(secret);
          // What the platform answered, unchanged (person/merge answers one ID per person, tags/get a bare array, ...).
          if (endpoint.id === 'tags/get') expect(Array.isArray(answer)).toBe(true);
          else expect(answer).not.toHaveProperty('error');

          const refused = await send(endpoint, WRONG[endpoint.scope]);
          expect(refused.status).toBe(403);
          const body = (await refused.json()) as { error: { code: string; message: string } };
          expect(body.error.code).toBe('forbidden');
          expect(body.error.message).toContain(endpoint.scope);

          const admin = await send(endpoint, 'admin');
          expect(admin.status).toBe(200);
          expect(upstream.received).toHaveLength(2);
        });
      }
    });

    describe('tokens', () => {
      it('answers 401 without a token, with an unknown token or a non-Bearer scheme, and forwards nothing', async () => {
        const endpoint = ENDPOINT_LIST.find((e) => e.id === 'person/get')!;
        for (const authorization of [undefined, 'Bearer rt_not_a_configured_token', `Basic ${TOKENS.admin}`, `Bearer ${TOKENS.admin}x`, 'Bearer ']) {
          const init: RequestInit = { method: 'POST', body: '{}', headers: authorization === undefined ? {} : { authorization } };
          const response = await target.request(endpoint.path, init);
          expect(response.status, String(authorization)).toBe(401);
          expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
          const body = (await response.json()) as { error: { code: string } };
          expect(['missing_token', 'invalid_token']).toContain(body.error.code);
        }
        expect(upstream.received).toHaveLength(0);
      });

      it('limits a token with an endpoint list to those endpoints, within its scopes', async () => {
        const get = ENDPOINT_LIST.find((e) => e.id === 'person/get')!;
        const merge = ENDPOINT_LIST.find((e) => e.id === 'person/merge')!;
        const tags = ENDPOINT_LIST.find((e) => e.id === 'tags/get')!;
        expect((await send(get, 'limited')).status).toBe(200);
        expect((await send(merge, 'limited')).status).toBe(200);
        const refused = await send(tags, 'limited');
        expect(refused.status).toBe(403);
        expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('limited to person/get, person/merge');
        expect(upstream.received.map((r) => r.path)).toEqual(['/v1/person/get', '/v1/person/merge']);
      });
    });

    describe('only the fixed paths', () => {
      const unknown: [string, string][] = [
        ['POST', '/v1/person/nope'],
        ['GET', '/v1/person/get'],
        ['DELETE', '/v1/person/merge'],
        ['POST', '/v1/person/get/'],
        ['POST', '/v1/person/get/../../x'],
        ['POST', '/v1/person/get/..%2F..%2Fx'],
        ['POST', '/v1/person%2Fget'],
        ['POST', '/v1//person/get'],
        ['POST', '/v1/person//get'],
        ['POST', '/v1/PERSON/GET'],
        ['POST', '/v1/'],
        ['POST', '/v1'],
        ['POST', '/v1/https://evil.example/v1/person/get'],
        ['OPTIONS', '/v1/person/get'],
      ];
      for (const [method, path] of unknown) {
        it(`${method} ${path} is 404 in the relay's error shape and never forwarded, even with an admin token`, async () => {
          const response = await call(path, 'admin', method === 'GET' ? undefined : '{}', { method });
          expect(response.status).toBe(404);
          expect(response.headers.get('cache-control')).toBe('no-store');
          const body = (await response.json()) as { error: { code: string; message: string; details: unknown[] } };
          expect(body.error.code).toBe('unknown_endpoint');
          expect(body.error.details).toEqual([]);
          expect(upstream.received).toHaveLength(0);
        });
      }

      it('forwards to the fixed path only: a query string never reaches the platform', async () => {
        const response = await call('/v1/person/get?api_key=x&baseUrl=https://evil.example&cursor_id=1', 'read', {});
        expect(response.status).toBe(200);
        expect(upstream.received.map((r) => `${r.path}${r.search}`)).toEqual(['/v1/person/get']);
      });
    });

    describe('bodies are checked before anything is sent', () => {
      it('answers 400 malformed_json for a body that is not JSON', async () => {
        for (const text of ['{"people":[', 'not json', '{"a":1}}']) {
          const response = await call('/v1/person/merge', 'write', text);
          expect(response.status).toBe(400);
          expect(((await response.json()) as { error: { code: string } }).error.code).toBe('malformed_json');
        }
        expect(upstream.received).toHaveLength(0);
      });

      it('answers 400 invalid_request naming the field, with every issue in details', async () => {
        const body = { people: [{ fields: { 'str::email': 'a@example.com' } }, { fields: { 'bad field': 1 } }] };
        const response = await call('/v1/person/merge', 'write', body);
        expect(response.status).toBe(400);
        const answer = (await response.json()) as { error: { code: string; message: string; details: { path: string; message: string }[] } };
        expect(answer.error.code).toBe('invalid_request');
        expect(answer.error.message).toContain('people[1].fields');
        expect(answer.error.details[0]?.path).toBe('people[1].fields');

        const cases: [string, unknown, string][] = [
          ['/v1/person/merge', { people: [] }, 'people'],
          ['/v1/person/merge', { people: people(101) }, 'people'],
          ['/v1/person/get', { limit: 'ten' }, 'limit'],
          ['/v1/person/get-by-ids', { contact_ids: ['00a1b2c3d4e5f60718293a4b'], fields: Array.from({ length: 151 }, () => 'str::email') }, 'fields'],
          ['/v1/person/merge', { people: people(1), merge_by: ['str::email', 'str::first', 'str::last', 'str::ei'] }, 'merge_by'],
          ['/v1/activities/create', { activities: [{ activity_id: 'act:cm:x', person_id: 'p1', attributes: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`str:cm:a${i}`, 'v'])) }] }, 'attributes'],
          ['/v1/tags/get', [1, 2], ''],
        ];
        for (const [path, invalid, field] of cases) {
          const refused = await call(path, 'admin', invalid);
          expect(refused.status, path).toBe(400);
          const error = ((await refused.json()) as { error: { message: string; details: { path: string }[] } }).error;
          expect(error.details.some((issue) => (field === '' ? issue.path === '' : issue.path.includes(field))), `${path} ${JSON.stringify(error.details)}`).toBe(true);
        }
        expect(upstream.received).toHaveLength(0);
      });

      it('answers 413 for a body over 2 MB and forwards nothing', async () => {
        const big = JSON.stringify({ people: [{ fields: { 'str::email': 'a@example.com', 'str::first': 'x'.repeat(2 * 1024 * 1024) } }] });
        const response = await call('/v1/person/merge', 'write', big);
        expect(response.status).toBe(413);
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
        expect(upstream.received).toHaveLength(0);
      });

      it('takes an empty body as {} on the list endpoints', async () => {
        const response = await target.request('/v1/person/custom-field/get', { method: 'POST', headers: { authorization: `Bearer ${TOKENS.read}` } });
        expect(response.status).toBe(200);
        expect(upstream.received[0]?.body).toEqual({});
      });
    });

    describe("the platform's answers", () => {
      it('passes status, body and Content-Type of an error through unchanged', async () => {
        const error = { request_id: 'r-1', code: 400, error: 'Unknown filter operator $nope', details: [{ status: 'invalid', error: 'x' }] };
        upstream.on('/v1/person/get', () => new Response(JSON.stringify(error), { status: 400, headers: { 'content-type': 'application/json; charset=utf-8', 'set-cookie': 'upstream=1' } }));
        const response = await call('/v1/person/get', 'read', {});
        expect(response.status).toBe(400);
        expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
        expect(response.headers.get('set-cookie')).toBeNull();
        expect(await response.json()).toEqual(error);
      });

      it('streams a large page through without waiting for its end', async () => {
        let release!: () => void;
        const released = new Promise<void>((resolve) => (release = resolve));
        const first = '{"contacts":[' + '{"id":"00a1b2c3d4e5f60718293a4b"},'.repeat(2000);
        upstream.on('/v1/person/get', () => {
          const encoder = new TextEncoder();
          const stream = new ReadableStream<Uint8Array>({
            async start(controller) {
              controller.enqueue(encoder.encode(first));
              await released;
              controller.enqueue(encoder.encode('{"id":"00a1b2c3d4e5f60718293a4c"}],"has_more":false}'));
              controller.close();
            },
          });
          return new Response(stream, { headers: { 'content-type': 'application/json' } });
        });
        const response = await call('/v1/person/get', 'read', {});
        expect(response.status).toBe(200);
        const reader = response.body!.getReader();
        const decoder = new TextDecoder();
        let seen = '';
        // The platform has not finished the page yet: what arrives here was streamed, not buffered.
        while (seen.length < first.length) {
          const { done, value } = await reader.read();
          if (done) break;
          seen += decoder.decode(value, { stream: true });
        }
        expect(seen).toBe(first);
        release();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          seen += decoder.decode(value, { stream: true });
        }
        expect((JSON.parse(seen) as { contacts: unknown[] }).contacts).toHaveLength(2001);
      });

      it('passes a 429 on with Retry-After from try-in-seconds, then holds calls for that window without calling the platform', async () => {
        const limited = { error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 7 } };
        upstream.on('/v1/person/get', (_request, count) => (count === 0 ? new Response(JSON.stringify(limited), { status: 429, headers: { 'content-type': 'application/json' } }) : Response.json({ contacts: [] })));
        const first = await call('/v1/person/get', 'read', {});
        expect(first.status).toBe(429);
        expect(first.headers.get('retry-after')).toBe('7');
        expect(await first.json()).toEqual(limited);

        clock += 2_000;
        const held = await call('/v1/tags/get', 'read', {});
        expect(held.status).toBe(429);
        expect(held.headers.get('retry-after')).toBe('5');
        const body = (await held.json()) as { error: { code: string; message: string; 'try-in-seconds': number } };
        expect(body.error.code).toBe('rate_limited');
        expect(body.error['try-in-seconds']).toBe(5);
        expect(upstream.received).toHaveLength(1);

        clock += 5_000;
        const after = await call('/v1/person/get', 'read', {});
        expect(after.status).toBe(200);
        expect(upstream.received).toHaveLength(2);
      });
    });

    describe('?chunk=true', () => {
      it('splits a merge of 250 people into 100 + 100 + 50, sent in order, and joins the answers in order', async () => {
        const body = { people: people(250), merge_by: ['str::email'] };
        const response = await call('/v1/person/merge?chunk=true', 'write', body);
        expect(response.status).toBe(200);
        expect(response.headers.get('x-relay-chunks')).toBe('3');
        const answer = (await response.json()) as { people: { person_id: string; status: string }[] };
        expect(upstream.received.map((r) => (r.body as { people: unknown[] }).people.length)).toEqual([100, 100, 50]);
        const sent = upstream.received.flatMap((r) => (r.body as { people: { fields: Record<string, string> }[]; merge_by: string[] }).people.map((p) => p.fields['str::email']));
        expect(sent).toEqual(body.people.map((p) => p.fields['str::email']));
        expect(upstream.received.every((r) => JSON.stringify((r.body as { merge_by: unknown }).merge_by) === '["str::email"]')).toBe(true);
        expect(answer.people).toHaveLength(250);
        // The platform numbered people in arrival order: the joined answer keeps input order.
        const ids = answer.people.map((p) => parseInt(p.person_id, 16));
        expect(ids).toEqual([...ids].sort((a, b) => a - b));
        expect(new Set(ids).size).toBe(250);
      });

      it('joins counts by adding them (archive of 250 IDs)', async () => {
        const inclusion_ids = Array.from({ length: 250 }, (_, i) => i.toString(16).padStart(24, '0'));
        const response = await call('/v1/person/archive?chunk=true', 'write', { inclusion_ids }, { method: 'PUT' });
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({ scheduled_contacts: 0, archived_contacts: 250 });
      });

      it('refuses the whole call, naming the item, when any chunk is invalid: nothing is sent', async () => {
        const body = { people: people(250) };
        body.people[203]!.fields = { 'str::first': 'no email or external id', 'nope': 'x' } as never;
        const response = await call('/v1/person/merge?chunk=true', 'write', body);
        expect(response.status).toBe(400);
        const error = ((await response.json()) as { error: { message: string; details: { path: string }[] } }).error;
        expect(error.details[0]?.path).toMatch(/^people\[203\]/);
        expect(error.message).toContain('people[203]');
        expect(upstream.received).toHaveLength(0);
      });

      it('waits out a 429 between chunks and resends that chunk', async () => {
        const limited = { error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 2 } };
        upstream.on('/v1/activities/create', (request, count) =>
          count === 1
            ? new Response(JSON.stringify(limited), { status: 429, headers: { 'content-type': 'application/json' } })
            : Response.json({ activities: (request.body as { activities: unknown[] }).activities.map((_, i) => ({ status: 'queued', n: count * 1000 + i })) }),
        );
        const activities = Array.from({ length: 150 }, (_, i) => ({ activity_id: 'act:cm:viewed', fields: { 'str::email': `p${i}@example.com` } }));
        const response = await call('/v1/activities/create?chunk=true', 'write', { activities });
        expect(response.status).toBe(200);
        const answer = (await response.json()) as { activities: { n: number }[] };
        expect(upstream.received.map((r) => (r.body as { activities: unknown[] }).activities.length)).toEqual([100, 50, 50]);
        expect(answer.activities).toHaveLength(150);
        expect(answer.activities.slice(99, 101).map((a) => a.n)).toEqual([99, 2000]);
      });

      it('stops at a chunk the platform refuses and reports what was accepted before it', async () => {
        upstream.on('/v1/accounts/merge', (request, count) =>
          count === 1
            ? Response.json({ request_id: 'r', code: 500, error: 'boom' }, { status: 500 })
            : Response.json({ accounts: (request.body as { accounts: unknown[] }).accounts.map(() => ({ account_id: 'a', status: 'created' })) }),
        );
        const accounts = Array.from({ length: 300 }, (_, i) => ({ fields: { 'str:o:name': `Acme ${i}` } }));
        const response = await call('/v1/accounts/merge?chunk=true', 'write', { accounts, merge_by: ['str:o:name'] });
        expect(response.status).toBe(500);
        const error = ((await response.json()) as { error: { code: string; message: string; details: { chunk: number; status: number }[] } }).error;
        expect(error.code).toBe('chunk_failed');
        expect(error.message).toContain('accounts[100..199]');
        expect(error.details.map((d) => [d.chunk, d.status])).toEqual([[1, 200], [2, 500]]);
        expect(upstream.received).toHaveLength(2);
      });

      it('is refused without the scope, and on endpoints that have no item list', async () => {
        expect((await call('/v1/person/merge?chunk=true', 'read', { people: people(150) })).status).toBe(403);
        const response = await call('/v1/tags/get?chunk=true', 'read', {});
        expect(response.status).toBe(400);
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe('chunk_unsupported');
        expect(upstream.received).toHaveLength(0);
      });
    });

    describe('audit', () => {
      it('writes one entry per call with token name, endpoint, status and duration, never a token, key or body', async () => {
        await call('/v1/person/merge', 'write', SAMPLE_BODIES['person/merge']);
        await call('/v1/person/delete', 'write', SAMPLE_BODIES['person/delete'], { method: 'DELETE' });
        await call('/v1/person/get', null, {});
        await call('/v1/secret/rt_read_token_in_path', 'read', {});
        expect(audit).toHaveLength(4);
        expect(audit.map((e) => [e.token, e.endpoint, e.status, e.upstream_calls])).toEqual([
          ['write-holder', 'person/merge', 200, 1],
          ['write-holder', 'person/delete', 403, 0],
          [null, 'person/get', 401, 0],
          [null, null, 404, 0],
        ]);
        for (const entry of audit) expect(typeof entry.ms).toBe('number');
        const lines = audit.map((entry) => JSON.stringify(entry)).join('\n');
        for (const secret of [...Object.values(TOKENS), API_KEY, 'rt_read_token_in_path', 'ann@example.com']) expect(lines).not.toContain(secret);
      });
    });
  });
}
