/**
 * Fuzzing the emulator's endpoints over real HTTP the same way: anything the spec's validator
 * refuses, any missing or wrong key, content type, path or body must get a 4xx in the platform's
 * general error shape `{request_id, code, error}` and leave the stored state exactly as it was (no
 * half-writes); nothing answers 5xx, the process survives and the heap stays flat.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENDPOINT_LIST, validateRequest, type EndpointId } from '../../src/api/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/node.js';
import { SAMPLE_BODIES } from '../fixtures/bodies.js';
import { garbageBody, headerText, warmArbitraries, WRONG_CONTENT_TYPES } from './arbitraries.js';
import {
  caseCounter,
  expectEmulatorError,
  expectPrototypeClean,
  fcOptions,
  HEAP_SLACK,
  heapGrowthOfRepeat,
  nested,
  RUNS,
  send,
  TIMEOUT,
  type Reply,
} from './harness.js';
import { mutated } from './mutate.js';

const KEY = 'fuzz-emulator-key';
let emulator: RunningEmulator;
const counter = caseCounter('emulator');

const call = (method: string, path: string, body: string | Uint8Array | undefined, headers: Record<string, string> = {}): Promise<Reply> => {
  counter.add();
  return send(emulator.url, method, path, { 'x-api-key': KEY, 'content-type': 'application/json', ...headers }, body);
};

const state = () => JSON.stringify(emulator.emulator.snapshot());

/** Runs `act`; when it answered 4xx, the state must be what it was before. */
async function noHalfWrite(act: () => Promise<Reply>): Promise<Reply> {
  const before = state();
  const reply = await act();
  expect(reply.status, reply.text.slice(0, 300)).toBeLessThan(500);
  if (reply.status >= 400) expect(state() === before, `a ${reply.status} answer changed the state`).toBe(true);
  return reply;
}

/** The oracle. An empty body counts as `{}` (endpoints without a required body take nothing, as the platform does). */
function refusedBySpec(id: EndpointId, text: string): boolean {
  try {
    return !validateRequest(id, text.trim() === '' ? {} : JSON.parse(text), Buffer.byteLength(text)).ok;
  } catch {
    return true;
  }
}

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, key: KEY, plan: 'business' });
  // Something to overwrite, so a half-write would show.
  const seeded = await call(
    'POST',
    '/v1/person/merge',
    JSON.stringify({ people: [{ fields: { 'str::email': 'ann@example.com', 'str::first': 'Ann' }, tags: ['trial'] }] }),
  );
  expect(seeded.status, seeded.text).toBe(200);
  warmArbitraries(garbageBody('x'), mutated(SAMPLE_BODIES['person/merge']), headerText());
});

afterAll(async () => {
  counter.report();
  await emulator?.close();
});

describe('emulator fuzz: corpus', () => {
  const endpoints = ENDPOINT_LIST.map((e) => [e.id, e.method, e.path] as const);

  it.each(endpoints)('%s without X-Api-Key, or with a wrong one → 401 in the general shape, state unchanged', async (_id, method, path) => {
    for (const key of [undefined, '', 'wrong', KEY.toUpperCase(), `${KEY}x`, KEY.slice(0, -1)]) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (key !== undefined) headers['x-api-key'] = key;
      counter.add();
      const reply = await noHalfWrite(() => send(emulator.url, method, path, headers, '{}'));
      expectEmulatorError(reply, [401]);
    }
  });

  it.each(WRONG_CONTENT_TYPES)('person/merge with Content-Type %s → 4xx, state unchanged', async (type) => {
    const reply = await noHalfWrite(() => call('POST', '/v1/person/merge', JSON.stringify(SAMPLE_BODIES['person/merge']), { 'content-type': type }));
    expectEmulatorError(reply, [400, 415]);
  });

  const bodies: [string, string | Uint8Array, number[]][] = [
    ['truncated JSON', '{"people":[', [400]],
    ['JSON array', '[]', [400]],
    ['NaN', '{"people":[NaN]}', [400]],
    ['people as a string', '{"people":"x"}', [400]],
    ['__proto__ people', '{"__proto__":{"people":[{"fields":{"str::email":"a@example.com"}}]}}', [400]],
    ['constructor people', '{"constructor":{"people":[]},"people":[]}', [400]],
    ['nesting 100,000 deep', nested(100_000, 'array'), [400]],
    ['object nesting 50,000 deep', `{"people":${nested(50_000, 'object')}}`, [400]],
    ['invalid UTF-8', Uint8Array.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), [400]],
    ['a lone surrogate in UTF-8', Uint8Array.from([0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d]), [400]],
    ['10 MB of "x"', 'x'.repeat(10 * 1024 * 1024), [400, 413]],
    [
      '10 MB of valid JSON',
      JSON.stringify({ people: [{ fields: { 'str::email': 'ann@example.com', 'str::first': 'z'.repeat(10 * 1024 * 1024) } }] }),
      [400, 413],
    ],
    ['101 people', JSON.stringify({ people: Array.from({ length: 101 }, (_, i) => ({ fields: { 'str::email': `p${i}@example.com` } })) }), [400]],
    ['a field value of 1 MB', JSON.stringify({ people: [{ fields: { 'str::email': 'ann@example.com', 'str::first': 'z'.repeat(1024 * 1024) } }] }), [400]],
  ];
  it.each(bodies)('person/merge with %s → 4xx in the general shape, state unchanged', async (_name, body, statuses) => {
    const reply = await noHalfWrite(() => call('POST', '/v1/person/merge', body));
    expectEmulatorError(reply, statuses);
  });

  const paths = [
    '/v1/person/get/../../x',
    '/v1/person%2fget',
    '//v1/person/get',
    '/v1//person/get',
    '/v1/person/get/',
    '/v1/PERSON/get',
    '/v1/person/get%00',
    '/v1/unknown',
    '/v2/person/get',
    '/_emulator/../v1/x',
    '/v1/person/get;x',
  ];
  it.each(paths)('POST %s → 404 in the general shape', async (path) => {
    expectEmulatorError(await noHalfWrite(() => call('POST', path, '{}')), [404]);
  });

  it.each(['/_emulator/state', '/_emulator/reset'])('%s without the key → 401, state unchanged', async (path) => {
    counter.add();
    const reply = await noHalfWrite(() =>
      send(emulator.url, path.endsWith('reset') ? 'POST' : 'GET', path, { 'content-type': 'application/json' }, path.endsWith('reset') ? '{}' : undefined),
    );
    expectEmulatorError(reply, [401]);
  });
});

describe('emulator fuzz: properties', { timeout: TIMEOUT }, () => {
  const endpoint = fc.constantFrom(...ENDPOINT_LIST);

  it('mutated bodies for every endpoint: what the spec refuses gets a 4xx in the general shape; no answer is 5xx; no 4xx changes the state', async () => {
    await fc.assert(
      fc.asyncProperty(
        endpoint.chain((e) => fc.tuple(fc.constant(e), mutated(SAMPLE_BODIES[e.id]))),
        async ([e, text]) => {
          const reply = await noHalfWrite(() => call(e.method, e.path, text));
          counter.tally(`mutated: ${refusedBySpec(e.id, text) ? 'refused by spec' : `accepted by spec, ${reply.status}`}`);
          if (refusedBySpec(e.id, text)) expectEmulatorError(reply, [400, 413]);
          else if (reply.status >= 400) expectEmulatorError(reply);
        },
      ),
      fcOptions(21),
    );
  });

  it('garbage bodies (random bytes, text, JSON) for every endpoint: 4xx in the general shape unless the spec accepts them, state unchanged on every 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(endpoint, garbageBody('x'), async (e, body) => {
        const reply = await noHalfWrite(() => call(e.method, e.path, body));
        const text = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
        const exact = typeof body === 'string' || Buffer.from(text).equals(Buffer.from(body));
        if (!exact || refusedBySpec(e.id, text)) expectEmulatorError(reply, [400, 413]);
        else if (reply.status >= 400) expectEmulatorError(reply);
      }),
      fcOptions(22),
    );
  });

  it('any X-Api-Key but the key → 401, state unchanged', async () => {
    await fc.assert(
      fc.asyncProperty(endpoint, headerText(), async (e, key) => {
        fc.pre(key.trim() !== KEY);
        const reply = await noHalfWrite(() => call(e.method, e.path, JSON.stringify(SAMPLE_BODIES[e.id]), { 'x-api-key': key }));
        expectEmulatorError(reply, [401]);
      }),
      { ...fcOptions(23), numRuns: Math.ceil(RUNS / 2) },
    );
  });

  it('survives it all: still answers, no prototype polluted, heap flat over one more pass after GC', async () => {
    expect((await call('POST', '/v1/person/get', '{}')).status).toBe(200);
    expectPrototypeClean();
    // A leak shows as growth over a repeat of the same inputs once the first pass warmed the caches.
    const growth = await heapGrowthOfRepeat(async () => {
      await fc.assert(
        fc.asyncProperty(endpoint, garbageBody('x'), async (e, body) => {
          await noHalfWrite(() => call(e.method, e.path, body));
        }),
        fcOptions(24),
      );
      for (let i = 0; i < 3; i++) expectEmulatorError(await call('POST', '/v1/person/merge', 'x'.repeat(10 * 1024 * 1024)), [400, 413]);
    });
    expect(growth, `heap grew ${(growth / 2 ** 20).toFixed(1)} MB over a repeated pass of ${RUNS + 3} cases`).toBeLessThan(HEAP_SLACK);
  });
});
