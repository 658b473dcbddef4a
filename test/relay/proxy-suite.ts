/**
 * The proxy's conformance suite (the proxy contract, docs/architecture.md), written once and run against every target:
 * the proxy on Node over real HTTP (proxy.test.ts) and inside workerd (test/workerd/proxy.test.ts).
 * A target gets the tokens, the in-test platform, a logger and a clock, and answers requests.
 */
import { beforeAll, beforeEach, afterAll, describe, expect, it } from 'vitest';
import { ENDPOINT_LIST, validateRequest, type Endpoint, type EndpointId } from '../../src/api/index.js';
import type { AuditEntry } from '../../src/relay/proxy/index.js';
import { hashToken, type TokenConfig, type TokenScope } from '../../src/relay/core/tokens.js';
import { SAMPLE_BODIES } from '../fixtures/bodies.js';
import { flowCases } from './proxy-suite-flow.js';
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

/** Sends `body` (JSON, or a string as is) to `path` with the named token (null: none). */
export type Call = (path: string, token: keyof typeof TOKENS | null, body?: unknown, init?: RequestInit) => Promise<Response>;

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

export const people = (count: number) =>
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
        sleep: async (ms) => {
          clock += ms;
        },
      });
    });
    afterAll(() => target.close());
    beforeEach(() => {
      upstream.reset();
      audit.length = 0;
      // Past any hold a previous test left behind.
      clock += 3_600_000;
    });

    const call: Call = (path, token, body, init = {}) => {
      const headers = new Headers(init.headers);
      if (token !== null) headers.set('authorization', `Bearer ${TOKENS[token]}`);
      if (body !== undefined) headers.set('content-type', 'application/json');
      return target.request(path, {
        method: 'POST',
        ...init,
        headers,
        body: typeof body === 'string' ? body : body === undefined ? null : JSON.stringify(body),
      });
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
          [
            '/v1/activities/create',
            {
              activities: [
                { activity_id: 'act:cm:x', person_id: 'p1', attributes: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`str:cm:a${i}`, 'v'])) },
              ],
            },
            'attributes',
          ],
          ['/v1/tags/get', [1, 2], ''],
        ];
        for (const [path, invalid, field] of cases) {
          const refused = await call(path, 'admin', invalid);
          expect(refused.status, path).toBe(400);
          const error = ((await refused.json()) as { error: { message: string; details: { path: string }[] } }).error;
          expect(
            error.details.some((issue) => (field === '' ? issue.path === '' : issue.path.includes(field))),
            `${path} ${JSON.stringify(error.details)}`,
          ).toBe(true);
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

    flowCases({
      upstream,
      audit,
      call,
      advance: (ms) => {
        clock += ms;
      },
    });
  });
}
