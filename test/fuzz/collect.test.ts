/**
 * Fuzzing the relay's browser endpoint (the /collect contract, docs/architecture.md) on its Node entry over real HTTP, with an
 * in-test platform counting what arrives. Whole-request garbage must get a 4xx in
 * `{"error":{"code","message","details"}}`; a good envelope with bad items must answer 200 with
 * every item `rejected` (the contract's per-item answer); in both cases nothing reaches the
 * platform, the process survives, no prototype is polluted and the heap stays flat.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';
import { startPlatformStub, type PlatformStub } from '../fixtures/platform-stub.js';
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
import { brokenItem, foreignOrigin, garbageBody, warmArbitraries, WRONG_CONTENT_TYPES } from './arbitraries.js';

const KEY = 'pk_fuzz';
const ORIGIN = 'https://shop.example.com';
const TEXT = { 'content-type': 'text/plain', origin: ORIGIN };

let stub: PlatformStub;
let relay: RunningRelay;
const counter = caseCounter('collect');
let nextId = 0;
const validTrack = () => ({
  id: `valid-${process.pid}-${nextId++}`,
  type: 'track',
  ts: new Date().toISOString(),
  activity_id: 'act:cm:fuzz',
  attributes: { 'str:cm:plan': 'pro' },
  person: { 'str::email': 'ann@example.com' },
});

const post = async (body: string | Uint8Array, headers: Record<string, string> = TEXT, path = '/collect'): Promise<Reply> => {
  counter.add();
  return send(relay.url, 'POST', path, headers, body);
};

/**
 * Runs `act`, lets the deliverer send whatever it accepted, then checks the platform received
 * nothing (emptying the stub's log, which would keep every body).
 */
async function nothingForwarded<T>(act: () => Promise<T>): Promise<T> {
  stub.received.splice(0);
  const result = await act();
  await relay.drained();
  expect(stub.received.splice(0).map((r) => `${r.method} ${r.path}`)).toEqual([]);
  return result;
}

beforeAll(async () => {
  stub = await startPlatformStub((request) => ({
    body: request.path === '/v1/person/merge' ? { people: [] } : { activities: [{ status: 'queued', person_status: 'queued' }] },
  }));
  relay = await startRelay({
    port: 0,
    logger: () => {},
    env: {
      CDP_API_KEY: 'fuzz-platform-key',
      CDP_BASE_URL: stub.url,
      RELAY_BUDGET_MS: '1000',
      RELAY_SITES: JSON.stringify([{ key: KEY, origins: [ORIGIN], verify: 'open', visitor_rate_limit: { per_second: 1_000_000, burst: 1_000_000 } }]),
    },
  });
  await post(JSON.stringify({ key: KEY, batch: [{}] })); // warm the relay's paths and fast-check's tables before the heap baseline
  warmArbitraries(garbageBody(KEY), brokenItem(), foreignOrigin(ORIGIN));
});

afterAll(async () => {
  counter.report();
  await relay?.close();
  await stub?.close();
});

describe('/collect fuzz: corpus of nasty requests', () => {
  it('the positive control reaches the platform (so "nothing forwarded" below can fail)', async () => {
    const before = stub.received.length;
    const reply = await post(JSON.stringify({ key: KEY, batch: [validTrack()] }));
    expect(reply.status).toBe(200);
    await relay.drained();
    expect(stub.received.slice(before).map((r) => r.path)).toEqual(['/v1/activities/create']);
    expect(stub.received.at(-1)?.headers['x-api-key']).toBe('fuzz-platform-key');
  });

  const malformed: [string, string | Uint8Array, number[]][] = [
    ['empty body', '', [400]],
    ['truncated JSON', '{"key":"pk_fuzz","batch":[', [400]],
    ['JSON null', 'null', [400]],
    ['JSON array', '[{"key":"pk_fuzz","batch":[]}]', [400]],
    ['JSON string', '"pk_fuzz"', [400]],
    ['NaN literal', '{"key":"pk_fuzz","batch":[NaN]}', [400]],
    ['single quotes', "{'key':'pk_fuzz','batch':[]}", [400]],
    ['trailing comma', '{"key":"pk_fuzz","batch":[],}', [400]],
    ['comment', '{"key":"pk_fuzz",/*x*/"batch":[]}', [400]],
    ['key as number', '{"key":1,"batch":[]}', [400]],
    ['key missing', '{"batch":[]}', [400]],
    ['batch as object', '{"key":"pk_fuzz","batch":{"0":{}}}', [400]],
    ['batch as string', '{"key":"pk_fuzz","batch":"[]"}', [400]],
    ['identity as object', '{"key":"pk_fuzz","batch":[],"identity":{}}', [400]],
    ['unknown site key', '{"key":"pk_guess","batch":[]}', [401]],
    ['__proto__ as the key', '{"key":"__proto__","batch":[]}', [401]],
    ['constructor as the key', '{"key":"constructor","batch":[]}', [401]],
    ['__proto__ envelope', '{"__proto__":{"key":"pk_fuzz","batch":[]}}', [400]],
    ['101 items', JSON.stringify({ key: KEY, batch: Array.from({ length: 101 }, validTrack) }), [413]],
    ['nesting 100,000 deep', nested(100_000, 'array'), [400]],
    ['object nesting 50,000 deep', nested(50_000, 'object'), [400]],
    ['invalid UTF-8 (0xff 0xfe)', Uint8Array.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), [400]],
    ['overlong UTF-8 "/"', Uint8Array.from([0x7b, 0x22, 0xc0, 0xaf, 0x22, 0x3a, 0x31, 0x7d]), [400]],
    ['UTF-8 surrogate half', Uint8Array.from([0x22, 0xed, 0xa0, 0x80, 0x22]), [400]],
    ['truncated UTF-8 sequence', Uint8Array.from([0x7b, 0x22, 0x6b, 0x22, 0x3a, 0x22, 0xe2, 0x82]), [400]],
    ['NUL bytes', '\u0000\u0000{"key":"pk_fuzz","batch":[]}', [400]],
    ['513 KB of JSON', JSON.stringify({ key: KEY, batch: [{ ...validTrack(), attributes: { 'str:cm:x': 'x'.repeat(513 * 1024) } }] }), [413]],
    ['10 MB of "x"', 'x'.repeat(10 * 1024 * 1024), [413]],
    ['10 MB JSON string', `{"key":"pk_fuzz","batch":["${'a'.repeat(10 * 1024 * 1024)}"]}`, [413]],
  ];
  it.each(malformed)('%s → 4xx in the error shape, nothing forwarded', async (_name, body, statuses) => {
    const reply = await nothingForwarded(() => post(body));
    expectRelayError(reply, statuses);
  });

  const shapeBreakers: [string, Record<string, unknown>][] = [
    ['attributes as an array', { ...validTrack(), attributes: ['a'] }],
    ['identify fields as an empty array', { id: 'arr-fields', type: 'identify', fields: [] }],
    ['location as an array', { id: 'arr-location', type: 'identify', fields: { 'str::email': 'ann@example.com' }, location: ['x'] }],
    [
      '__proto__ key in attributes',
      JSON.parse(
        `{"id":"proto-attr","type":"track","activity_id":"act:cm:fuzz","person":{"str::email":"ann@example.com"},"attributes":{"__proto__":{"polluted":1}}}`,
      ) as Record<string, unknown>,
    ],
    ['constructor key in attributes', { ...validTrack(), attributes: { constructor: 'x' } }],
    [
      'constructor key in identify fields',
      { id: 'ctor-fields', type: 'identify', fields: { 'str::email': 'ann@example.com', constructor: { polluted: true } } },
    ],
  ];
  it.each(shapeBreakers)('an item with %s is rejected with a reason, not forwarded (nor silently emptied)', async (_name, item) => {
    const reply = await nothingForwarded(() => post(JSON.stringify({ key: KEY, batch: [item] })));
    expect(reply.status).toBe(200);
    const [result] = (JSON.parse(reply.text) as { results: { status: string; error?: string }[] }).results;
    expect(result?.status, reply.text).toBe('rejected');
    expect(result?.error).toBeTruthy();
    expectPrototypeClean();
  });

  it.each(WRONG_CONTENT_TYPES)('Content-Type %s → 415, nothing forwarded', async (type) => {
    const reply = await nothingForwarded(() => post(JSON.stringify({ key: KEY, batch: [validTrack()] }), { 'content-type': type, origin: ORIGIN }));
    expectRelayError(reply, [415]);
  });

  const origins = [
    'https://shop.example.com.evil.test',
    'null',
    'http://shop.example.com',
    'https://evil.test',
    'https://shop.example.com@evil.test',
    'https://shop.example.com/',
    'https://shop.example.com:443.evil.test',
  ];
  it.each(origins)('a valid batch from Origin %j → 403, nothing forwarded', async (origin) => {
    const reply = await nothingForwarded(() => post(JSON.stringify({ key: KEY, batch: [validTrack()] }), { 'content-type': 'text/plain', origin }));
    expectRelayError(reply, [403]);
  });

  it('a valid batch without Origin → 403 origin_required, nothing forwarded', async () => {
    const reply = await nothingForwarded(() => post(JSON.stringify({ key: KEY, batch: [validTrack()] }), { 'content-type': 'text/plain' }));
    expect(expectRelayError(reply, [403]).code).toBe('origin_required');
  });

  it.each(['GET', 'PUT', 'DELETE', 'PATCH'])('%s /collect → 405 in the error shape', async (method) => {
    counter.add();
    const reply = await nothingForwarded(() =>
      send(relay.url, method, '/collect', TEXT, method === 'GET' ? undefined : JSON.stringify({ key: KEY, batch: [validTrack()] })),
    );
    expectRelayError(reply, [405]);
  });

  it.each(['/collect/', '/COLLECT', '/collect%00', '//collect', '/collect%2f', '/x/../../collect/x', '/collect;x'])(
    'POST %s (a path trick) → 404, nothing forwarded',
    async (path) => {
      const reply = await nothingForwarded(() => post(JSON.stringify({ key: KEY, batch: [validTrack()] }), TEXT, path));
      expectRelayError(reply, [404]);
    },
  );

  const smuggled: [string, string][] = [
    [
      'CR inside a header value',
      `POST /collect HTTP/1.1\r\nHost: x\r\nOrigin: ${ORIGIN}\rX-Api-Key: stolen\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}`,
    ],
    [
      'Content-Length and Transfer-Encoding together',
      `POST /collect HTTP/1.1\r\nHost: x\r\nOrigin: ${ORIGIN}\r\nContent-Type: text/plain\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    ],
    [
      'two Content-Lengths',
      `POST /collect HTTP/1.1\r\nHost: x\r\nOrigin: ${ORIGIN}\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}`,
    ],
    ['NUL in a header', `POST /collect HTTP/1.1\r\nHost: x\r\nOrigin: ${ORIGIN}\u0000evil\r\nContent-Length: 2\r\n\r\n{}`],
    ['a 40 KB header', `POST /collect HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\nContent-Length: 2\r\n\r\n{}`],
  ];
  it.each(smuggled)('%s → refused by the HTTP parser (400/431) before the relay, nothing forwarded', async (_name, bytes) => {
    counter.add();
    const reply = await nothingForwarded(() => sendRaw(relay.url, bytes));
    expect([400, 431]).toContain(reply.status);
  });
});

describe('/collect fuzz: properties', { timeout: TIMEOUT }, () => {
  it('any garbage body (random bytes, random JSON, envelopes of the wrong types) → 4xx in the error shape, nothing forwarded', async () => {
    await fc.assert(
      fc.asyncProperty(
        garbageBody(KEY),
        fc.constantFrom('text/plain', 'application/json', 'text/plain;charset=UTF-8', 'Application/JSON; charset=utf-8'),
        async (body, type) => {
          const reply = await nothingForwarded(() => post(body, { 'content-type': type, origin: ORIGIN }));
          expectRelayError(reply, [400, 401, 413]);
        },
      ),
      fcOptions(1),
    );
  });

  it('a good envelope of bad items (wrong types, bad field IDs, __proto__/constructor keys, huge or deep values) → 200, every item rejected in order, nothing forwarded', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(brokenItem(), { minLength: 1, maxLength: 6 }), async (items) => {
        const batch = items.map((item) => JSON.parse(item) as unknown);
        const reply = await nothingForwarded(() => post(`{"key":"${KEY}","batch":[${items.join(',')}]}`));
        expect(reply.status, reply.text.slice(0, 300)).toBe(200);
        const { results } = JSON.parse(reply.text) as { results: { id: string; status: string; error?: string }[] };
        expect(results.map((r) => r.status)).toEqual(batch.map(() => 'rejected'));
        results.forEach((result, index) => {
          const raw = batch[index] as { id?: unknown } | null;
          // an id is echoed only when it could be one (at most 128 characters), else its place stands in
          const echoed = typeof raw === 'object' && raw !== null && typeof raw.id === 'string' && raw.id.length <= 128;
          expect(result.id).toBe(echoed ? raw.id : `#${index}`);
          expect(typeof result.error === 'string' && result.error.length > 0, `item ${index} has no reason`).toBe(true);
        });
      }),
      fcOptions(2),
    );
  });

  it('a valid batch from any other Origin → 403, nothing forwarded', async () => {
    await fc.assert(
      fc.asyncProperty(foreignOrigin(ORIGIN), async (origin) => {
        const reply = await nothingForwarded(() => post(JSON.stringify({ key: KEY, batch: [validTrack()] }), { 'content-type': 'text/plain', origin }));
        expectRelayError(reply, [403]);
      }),
      { ...fcOptions(3), numRuns: Math.ceil(fcOptions(3).numRuns / 2) },
    );
  });

  it('survives it all: still answers a valid batch, no prototype polluted, heap flat over one more pass after GC', async () => {
    const before = stub.received.length;
    const reply = await post(JSON.stringify({ key: KEY, batch: [validTrack()] }));
    expect(reply.status).toBe(200);
    await relay.drained();
    expect(stub.received.length).toBe(before + 1);
    expectPrototypeClean();
    // Everything above warmed the caches; a leak shows as growth over a further pass of the same inputs.
    // A leak shows as growth over a repeat of the same inputs once the first pass warmed the caches.
    const growth = await heapGrowthOfRepeat(async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            garbageBody(KEY),
            fc.array(brokenItem(), { minLength: 1, maxLength: 4 }).map((items) => `{"key":"${KEY}","batch":[${items.join(',')}]}`),
          ),
          async (body) => {
            const answer = await nothingForwarded(() => post(body));
            expect(answer.status).toBeLessThan(500);
          },
        ),
        fcOptions(4),
      );
      for (let i = 0; i < 3; i++) expectRelayError(await post('x'.repeat(10 * 1024 * 1024)), [413]);
    });
    expect(growth, `heap grew ${(growth / 2 ** 20).toFixed(1)} MB over a repeated pass of ${RUNS + 3} cases`).toBeLessThan(HEAP_SLACK);
  });
});
