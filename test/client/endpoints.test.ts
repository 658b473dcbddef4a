import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENDPOINT_LIST, type EndpointId } from '../../src/api/index.js';
import { createClient, type Client } from '../../src/client/index.js';
import { SAMPLE_BODIES } from '../fixtures/bodies.js';
import { startPlatformStub, type PlatformStub } from '../fixtures/platform-stub.js';

/** A recorded-shape answer per endpoint (docs/platform.md). */
const ANSWERS: Partial<Record<EndpointId, unknown>> = {
  'person/merge': { people: [{ person_id: '00a1b2c3d4e5f60718293a4b', status: 'created' }] },
  'activities/create': { activities: [{ status: 'queued', person_status: 'queued' }] },
  'tags/get': [{ id: 1, name: 'trial', type: '', count: 1 }],
  'person/archive': { scheduled_contacts: 0, archived_contacts: 2 },
  'person/get-by-ids': { contacts: { '00a1b2c3d4e5f60718293a4b': { id: '00a1b2c3d4e5f60718293a4b', fields: { 'str::email': 'ann@example.com' } } } },
};

let stub: PlatformStub;
let client: Client;

beforeAll(async () => {
  stub = await startPlatformStub((request) => ({ body: ANSWERS[request.path.slice(4) as EndpointId] ?? { ok: request.path } }));
  client = createClient({ apiKey: 'secret-key', baseUrl: stub.url });
});
afterAll(() => stub.close());

describe('every endpoint of the table is callable from the client', () => {
  it('has 29 endpoints, each with a unique method+path', () => {
    expect(ENDPOINT_LIST).toHaveLength(29);
    expect(new Set(ENDPOINT_LIST.map((e) => `${e.method} ${e.path}`)).size).toBe(29);
  });

  for (const endpoint of ENDPOINT_LIST) {
    it(`${endpoint.method} ${endpoint.path} as client.${endpoint.group}.${endpoint.action}`, async () => {
      const before = stub.received.length;
      const method = (client as unknown as Record<string, Record<string, (body: unknown) => Promise<unknown>>>)[endpoint.group]![endpoint.action]!;
      const result = await method(SAMPLE_BODIES[endpoint.id]);
      expect(result).toEqual(ANSWERS[endpoint.id] ?? { ok: endpoint.path });
      const request = stub.received[before]!;
      expect(request.method).toBe(endpoint.method);
      expect(request.path).toBe(endpoint.path);
      expect(request.headers['x-api-key']).toBe('secret-key');
      expect(request.headers['content-type']).toMatch(/^application\/json/);
      expect(request.body).toEqual(SAMPLE_BODIES[endpoint.id]);
    });
  }

  it('client.call reaches an endpoint by name', async () => {
    await expect(client.call('tags/get')).resolves.toEqual(ANSWERS['tags/get']);
  });
});

describe('options', () => {
  it('picks the region base address, and baseUrl wins', () => {
    expect(createClient({ apiKey: 'k' }).baseUrl).toBe('https://api.ap3api.com');
    expect(createClient({ apiKey: 'k', region: 'au' }).baseUrl).toBe('https://api.au.ap3api.com');
    expect(createClient({ apiKey: 'k', region: 'eu' }).baseUrl).toBe('https://api.eu.ap3api.com');
    expect(createClient({ apiKey: 'k', region: 'eu', baseUrl: 'http://127.0.0.1:1/' }).baseUrl).toBe('http://127.0.0.1:1');
  });

  it('refuses bad options naming the option', () => {
    expect(() => createClient({})).toThrow(/apiKey .*or token/);
    expect(() => createClient({ apiKey: 'k', region: 'mars' as 'eu' })).toThrow(/region must be one of default, au, eu/);
    expect(() => createClient({ apiKey: 'k', baseUrl: 'ftp://x' })).toThrow(/baseUrl must be an http/);
    expect(() => createClient({ apiKey: 'k', retry: { limit: -1 } })).toThrow(/retry.limit/);
    expect(() => createClient({ apiKey: 'k', timeout: 0 })).toThrow(/timeout/);
  });

  it('sends a relay token as a Bearer header instead of the key', async () => {
    const viaRelay = createClient({ token: 'tok_123', baseUrl: stub.url });
    const before = stub.received.length;
    await viaRelay.tags.get();
    expect(stub.received[before]!.headers['authorization']).toBe('Bearer tok_123');
    expect(stub.received[before]!.headers['x-api-key']).toBeUndefined();
  });
});
