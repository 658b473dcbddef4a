/**
 * Fuzzing the relay's proxy (the proxy contract, docs/architecture.md) on its Node entry over real HTTP, with an in-test
 * platform counting what arrives. The spec's validator is the oracle: a body it refuses must get
 * a 4xx in `{"error":{"code","message","details"}}` with nothing forwarded; a body it accepts must
 * reach the platform once, at the endpoint's fixed method and path, with only the platform key.
 * Paths, tokens and headers are fuzzed the same way; the process survives and the heap stays flat.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENDPOINT_LIST, validateRequest, type EndpointId } from '../../src/api/index.js';
import { hashToken } from '../../src/relay/index.js';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';
import { SAMPLE_BODIES } from '../fixtures/bodies.js';
import { startPlatformStub, type PlatformStub, type Received } from '../fixtures/platform-stub.js';
import { garbageBody, headerText, warmArbitraries } from './arbitraries.js';
import {
  caseCounter,
  expectPrototypeClean,
  expectRelayError,
  fcOptions,
  HEAP_SLACK,
  heapGrowthOfRepeat,
  nested,
  RUNS,
  send,
  TIMEOUT,
  sendRaw,
  type Reply,
} from './harness.js';
import { mutated } from './mutate.js';

const PLATFORM_KEY = 'fuzz-platform-key';
const ADMIN = 'rt_fuzz_admin_0123456789abcdefghijklmnopqrstuv';
const READER = 'rt_fuzz_reader_0123456789abcdefghijklmnopqrstu';
const FIXED = new Set(ENDPOINT_LIST.map((e) => `${e.method} ${e.path}`));
const merge = ENDPOINT_LIST.find((e) => e.id === 'person/merge')!;

let stub: PlatformStub;
let relay: RunningRelay;
const counter = caseCounter('proxy');

const call = (method: string, path: string, body: string | Uint8Array | undefined, headers: Record<string, string> = {}): Promise<Reply> => {
  counter.add();
  return send(relay.url, method, path, { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json', ...headers }, body);
};

/** What reached the platform during `act` (taken out of the stub's log, which would otherwise keep every body). */
async function upstreamDuring<T>(act: () => Promise<T>): Promise<{ result: T; arrived: Received[] }> {
  stub.received.splice(0);
  const result = await act();
  return { result, arrived: stub.received.splice(0) };
}

function expectOnlyPlatformCredentials(request: Received): void {
  expect(request.headers['x-api-key']).toBe(PLATFORM_KEY);
  for (const name of ['authorization', 'cookie', 'proxy-authorization', 'x-forwarded-for', 'x-forwarded-host', 'x-real-ip'])
    expect(request.headers[name], name).toBeUndefined();
}

/** The oracle: what the proxy must do with `text` sent to `id`. */
function expected(id: EndpointId, text: string): 'forward' | 'refuse' {
  let body: unknown;
  try {
    body = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    return 'refuse';
  }
  return validateRequest(id, body, Buffer.byteLength(text)).ok ? 'forward' : 'refuse';
}

beforeAll(async () => {
  stub = await startPlatformStub(() => ({ body: { ok: true } }));
  relay = await startRelay({
    port: 0,
    logger: () => {},
    env: {
      CDP_API_KEY: PLATFORM_KEY,
      CDP_BASE_URL: stub.url,
      RELAY_SITES: '[]',
      // The stub platform has no rate limit: at the default 10 calls a second, the pace every proxy
      // call now takes its place in would hold the fuzz's forwards for 20 s; what it checks is what
      // is forwarded, not when.
      RELAY_PLATFORM_RATE: '1000',
      RELAY_TOKENS: JSON.stringify([
        { name: 'fuzz-admin', sha256: await hashToken(ADMIN), scopes: ['admin'] },
        { name: 'fuzz-reader', sha256: await hashToken(READER), scopes: ['read'] },
      ]),
    },
  });
  warmArbitraries(garbageBody('x'), mutated(SAMPLE_BODIES['person/merge']), headerText());
});

afterAll(async () => {
  counter.report();
  await relay?.close();
  await stub?.close();
});

describe('proxy fuzz: corpus', () => {
  it('the positive control reaches the platform with the key swapped (so "nothing forwarded" can fail)', async () => {
    const { result, arrived } = await upstreamDuring(() => call('POST', '/v1/person/merge', JSON.stringify(SAMPLE_BODIES['person/merge'])));
    expect(result.status).toBe(200);
    expect(arrived.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/person/merge']);
    expectOnlyPlatformCredentials(arrived[0]!);
  });

  const paths = [
    '/v1/person/get/../../x',
    '/v1/person%2fget',
    '/v1/person%2Fget',
    '//v1/person/get',
    '/v1//person/get',
    '/v1/person/get/',
    '/v1/PERSON/get',
    '/v1/person/get%00',
    '/v1/%2e%2e/x',
    '/v1/person/get;x',
    '/v1/person/get%20',
    '/v1/',
    '/v1',
    '/v1/unknown',
    '/v1/person/get/x',
    '/v1/person/merge/../../../etc/passwd',
    '/v1/person/get%23x',
    '/v1/person/get%5c..%5cx',
    '/v1/person/%67et',
    '/%761/person/get',
    '/v1/person/get/.',
    '/v1/person/get..',
    '/v2/person/get',
  ];
  it.each(paths)('POST %s → 404 in the error shape, nothing forwarded', async (path) => {
    const { result, arrived } = await upstreamDuring(() => call('POST', path, '{}'));
    expectRelayError(result, [404]);
    expect(arrived).toEqual([]);
  });

  it.each(['/v1/person/./get', `http://evil.example.com/v1/person/get`, '/v1/person/get?x=1&chunk=no', '/v1/x/../person/get'])(
    '%s reaches only the fixed POST /v1/person/get (never another host or path)',
    async (path) => {
      const { result, arrived } = await upstreamDuring(() => call('POST', path, '{}'));
      expect(result.status).toBeLessThan(500);
      for (const request of arrived) expect(`${request.method} ${request.path}`).toBe('POST /v1/person/get');
      if (result.status >= 400) expectRelayError(result);
    },
  );

  it.each(ENDPOINT_LIST.map((e) => [e.id, e.method === 'POST' ? 'PUT' : 'POST', e.path] as const))(
    '%s with the wrong method (%s) → 404 or 405, nothing forwarded',
    async (_id, method, path) => {
      const { result, arrived } = await upstreamDuring(() => call(method, path, '{}'));
      expectRelayError(result, [404, 405]);
      expect(arrived).toEqual([]);
    },
  );

  const auth: [string, Record<string, string>][] = [
    ['no Authorization', { authorization: '' }],
    ['an empty bearer', { authorization: 'Bearer ' }],
    ['a wrong token', { authorization: 'Bearer rt_wrong' }],
    ['the token plus one character', { authorization: `Bearer ${ADMIN}x` }],
    ['Basic auth', { authorization: `Basic ${Buffer.from(`x:${ADMIN}`).toString('base64')}` }],
    ['the platform key as X-Api-Key', { authorization: '', 'x-api-key': PLATFORM_KEY }],
    ['the token in a cookie', { authorization: '', cookie: `token=${ADMIN}` }],
    ["the token's hash", { authorization: 'Bearer 0000000000000000000000000000000000000000000000000000000000000000' }],
  ];
  it.each(auth)('%s → 401, nothing forwarded', async (_name, headers) => {
    const { result, arrived } = await upstreamDuring(() => call('POST', '/v1/person/get', '{}', headers));
    expectRelayError(result, [401]);
    expect(arrived).toEqual([]);
  });

  it('a read token on a write endpoint → 403, nothing forwarded', async () => {
    const { result, arrived } = await upstreamDuring(() =>
      call('POST', '/v1/person/merge', JSON.stringify(SAMPLE_BODIES['person/merge']), { authorization: `Bearer ${READER}` }),
    );
    expectRelayError(result, [403]);
    expect(arrived).toEqual([]);
  });

  const bodies: [string, string | Uint8Array, number[]][] = [
    ['truncated JSON', '{"people":[', [400]],
    ['JSON array', '[]', [400]],
    ['JSON string', '"x"', [400]],
    ['people as a string', '{"people":"x"}', [400]],
    ['101 people', JSON.stringify({ people: Array.from({ length: 101 }, (_, i) => ({ fields: { 'str::email': `p${i}@example.com` } })) }), [400]],
    ['__proto__ people', '{"__proto__":{"people":[{"fields":{"str::email":"a@example.com"}}]}}', [400]],
    ['nesting 100,000 deep', nested(100_000, 'array'), [400]],
    ['object nesting 50,000 deep', `{"people":${nested(50_000, 'object')}}`, [400]],
    ['invalid UTF-8', Uint8Array.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), [400]],
    ['10 MB of "x"', 'x'.repeat(10 * 1024 * 1024), [413]],
    ['10 MB of valid-looking JSON', `{"people":[{"fields":{"str::email":"${'a'.repeat(10 * 1024 * 1024)}@example.com"}}]}`, [413]],
  ];
  it.each(bodies)('person/merge with %s → 4xx in the error shape, nothing forwarded', async (_name, body, statuses) => {
    const { result, arrived } = await upstreamDuring(() => call('POST', merge.path, body));
    expectRelayError(result, statuses);
    expect(arrived).toEqual([]);
  });

  it('caller credentials and forwarding headers never reach the platform, whatever the caller adds', async () => {
    const { result, arrived } = await upstreamDuring(() =>
      call('POST', '/v1/person/get', '{}', {
        'x-api-key': 'attacker-key',
        cookie: 'session=abc',
        'proxy-authorization': 'Basic eDp5',
        'x-forwarded-for': '203.0.113.9',
        'x-forwarded-host': 'evil.test',
        'x-real-ip': '203.0.113.9',
        connection: 'x-api-key, keep-alive',
        'x-http-method-override': 'DELETE',
      }),
    );
    expect(result.status).toBe(200);
    expect(arrived.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/person/get']);
    expectOnlyPlatformCredentials(arrived[0]!);
  });

  const smuggled: [string, string][] = [
    ['CR inside a header value', `POST /v1/person/get HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN}\rX-Api-Key: stolen\r\nContent-Length: 2\r\n\r\n{}`],
    [
      'Content-Length with Transfer-Encoding',
      `POST /v1/person/get HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    ],
    ['a backslash path', `POST /v1/person/get\\..\\x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN}\r\nContent-Length: 2\r\n\r\n{}`],
    ['a request line with spaces in the path', `POST /v1/person/get HTTP/1.1 /v1/person/delete HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}`],
  ];
  it.each(smuggled)('%s → refused by the HTTP parser (400) before the relay, nothing forwarded', async (_name, bytes) => {
    counter.add();
    const { result, arrived } = await upstreamDuring(() => sendRaw(relay.url, bytes));
    expect(result.status).toBe(400);
    expect(arrived).toEqual([]);
  });
});

describe('proxy fuzz: properties', { timeout: TIMEOUT }, () => {
  const endpoint = fc.constantFrom(...ENDPOINT_LIST);

  it('mutated bodies for every endpoint: refused by the validator → 4xx and nothing forwarded; accepted → forwarded once at the fixed path with only the key', async () => {
    const cases = endpoint.chain((e) => fc.tuple(fc.constant(e), mutated(SAMPLE_BODIES[e.id])));
    await fc.assert(
      fc.asyncProperty(cases, async ([e, text]) => {
        const { result, arrived } = await upstreamDuring(() => call(e.method, e.path, text));
        counter.tally(`mutated: ${expected(e.id, text)}`);
        if (expected(e.id, text) === 'refuse') {
          expectRelayError(result, [400, 413]);
          expect(arrived).toEqual([]);
        } else {
          expect(result.status, result.text.slice(0, 300)).toBe(200);
          expect(arrived.map((r) => `${r.method} ${r.path}`)).toEqual([`${e.method} ${e.path}`]);
          expectOnlyPlatformCredentials(arrived[0]!);
        }
      }),
      fcOptions(11),
    );
  });

  it('garbage bodies (random bytes, random JSON) for every endpoint follow the same oracle', async () => {
    await fc.assert(
      fc.asyncProperty(endpoint, garbageBody('x'), async (e, body) => {
        const text = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
        const { result, arrived } = await upstreamDuring(() => call(e.method, e.path, body));
        const validUtf8 = typeof body === 'string' || Buffer.from(text, 'utf8').equals(Buffer.from(body));
        counter.tally(`garbage: ${!validUtf8 ? 'refuse' : expected(e.id, text)}`);
        if (!validUtf8 || expected(e.id, text) === 'refuse') {
          expectRelayError(result, [400, 413]);
          expect(arrived).toEqual([]);
        } else {
          expect(result.status).toBe(200);
          expect(arrived.map((r) => `${r.method} ${r.path}`)).toEqual([`${e.method} ${e.path}`]);
        }
      }),
      fcOptions(12),
    );
  });

  it('any path: a 404 in the error shape, or one of the 29 fixed method+paths upstream — nothing else ever arrives', async () => {
    const segment = fc.oneof(
      fc.constantFrom('person', 'get', 'merge', 'accounts', 'v1', '..', '.', '', '%2f', '%2e%2e', '%00', 'delete', '~', '%5c'),
      fc.string({ unit: fc.constantFrom('a', '/', '.', '%', '2', 'f', 'v', '1', '?', '#', ';', '&', '='), maxLength: 8 }),
    );
    const path = fc.array(segment, { minLength: 1, maxLength: 6 }).map((parts) => `/v1/${parts.join('/')}`);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('POST', 'DELETE', 'PUT', 'GET'), path, async (method, p) => {
        const { result, arrived } = await upstreamDuring(() => call(method, p, method === 'GET' ? undefined : '{}'));
        expect(result.status).toBeLessThan(500);
        for (const request of arrived) expect(FIXED.has(`${request.method} ${request.path}`), `${request.method} ${request.path}`).toBe(true);
        if (result.status >= 400) expectRelayError(result);
      }),
      fcOptions(13),
    );
  });

  it('any Authorization value but the tokens → 401, nothing forwarded', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          headerText(),
          headerText().map((t) => `Bearer ${t}`),
          fc.string({ unit: fc.constantFrom(...'abcdef0123456789'), minLength: 64, maxLength: 64 }).map((t) => `Bearer ${t}`),
        ),
        async (value) => {
          fc.pre(value.trim() !== `Bearer ${ADMIN}` && value.trim() !== `Bearer ${READER}`);
          const { result, arrived } = await upstreamDuring(() => call('POST', '/v1/person/get', '{}', { authorization: value }));
          expectRelayError(result, [401]);
          expect(arrived).toEqual([]);
        },
      ),
      { ...fcOptions(14), numRuns: Math.ceil(RUNS / 2) },
    );
  });

  it('survives it all: still proxies, no prototype polluted, heap flat over one more pass after GC', async () => {
    expect((await call('POST', '/v1/person/get', '{}')).status).toBe(200);
    expectPrototypeClean();
    // A leak shows as growth over a repeat of the same inputs once the first pass warmed the caches.
    const growth = await heapGrowthOfRepeat(async () => {
      await fc.assert(
        fc.asyncProperty(
          endpoint.chain((e) => fc.tuple(fc.constant(e), mutated(SAMPLE_BODIES[e.id]))),
          async ([e, text]) => {
            expect((await upstreamDuring(() => call(e.method, e.path, text))).result.status).toBeLessThan(500);
          },
        ),
        fcOptions(15),
      );
      for (let i = 0; i < 3; i++) expectRelayError(await call('POST', merge.path, 'x'.repeat(10 * 1024 * 1024)), [413]);
    });
    expect(growth, `heap grew ${(growth / 2 ** 20).toFixed(1)} MB over a repeated pass of ${RUNS + 3} cases`).toBeLessThan(HEAP_SLACK);
  });
});
