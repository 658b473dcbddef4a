import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, HTTPError, NetworkError, RateLimitError, TimeoutError, ValidationError } from '../../src/client/index.js';
import { startPlatformStub, type PlatformStub } from '../fixtures/platform-stub.js';

let stub: PlatformStub;
beforeAll(async () => {
  stub = await startPlatformStub();
});
afterAll(() => stub.close());

const countTo = (path: string) => stub.received.filter((r) => r.path === path).length;
const fast = { backoffLimit: 20 };

describe('errors are typed and carry what the platform said', () => {
  it('a merge where every entry failed: 400 with code, message, details and request id, not retried', async () => {
    stub.on('/v1/person/merge', () => ({
      status: 400,
      body: { request_id: 'req-1', code: 400, error: 'All people failed', details: [{ status: 'suppressed', error: 'Email is suppressed' }] },
    }));
    const client = createClient({ apiKey: 'k', baseUrl: stub.url, retry: fast });
    const error = await client.person.merge({ people: [{ fields: { 'str::email': 'x@example.com' } }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HTTPError);
    expect(error).toMatchObject({ status: 400, code: 400, requestId: 'req-1', details: [{ status: 'suppressed', error: 'Email is suppressed' }] });
    expect((error as Error).message).toBe(`POST ${stub.url}/v1/person/merge failed with 400: All people failed`);
    expect(countTo('/v1/person/merge')).toBe(1);
  });

  it('401 for a wrong key is an HTTPError and is never retried', async () => {
    stub.on('/v1/tags/get', () => ({ status: 401, body: { request_id: 'r', code: 401, error: 'Unauthorized' } }));
    const client = createClient({ apiKey: 'wrong', baseUrl: stub.url, retry: fast });
    await expect(client.tags.get()).rejects.toMatchObject({ name: 'HTTPError', status: 401 });
    expect(countTo('/v1/tags/get')).toBe(1);
  });

  it('reads the relay error shape too', async () => {
    stub.on('/v1/person/get', () => ({ status: 403, body: { error: { code: 'scope_missing', message: 'token lacks read', details: [] } } }));
    const client = createClient({ token: 't', baseUrl: stub.url });
    await expect(client.person.get()).rejects.toMatchObject({ status: 403, code: 'scope_missing', message: expect.stringContaining('token lacks read') });
  });

  it('500 then success: retried with backoff and resolves', async () => {
    stub.on('/v1/person/custom-field/get', (_r, n) =>
      n === 0 ? { status: 500, body: { request_id: 'r', code: 500, error: 'boom' } } : { body: { fields: [] } },
    );
    const client = createClient({ apiKey: 'k', baseUrl: stub.url, retry: fast });
    await expect(client.person.getCustomFields()).resolves.toEqual({ fields: [] });
    expect(countTo('/v1/person/custom-field/get')).toBe(2);
  });

  it('5xx retries are bounded by retry.limit', async () => {
    stub.on('/v1/accounts/custom-field/get', () => ({ status: 503, body: { request_id: 'r', code: 503, error: 'down' } }));
    const client = createClient({ apiKey: 'k', baseUrl: stub.url, retry: { limit: 2, backoffLimit: 10 } });
    await expect(client.accounts.getCustomFields()).rejects.toMatchObject({ status: 503 });
    expect(countTo('/v1/accounts/custom-field/get')).toBe(3);
  });

  it('429 waits the body’s try-in-seconds, then succeeds', async () => {
    stub.on('/v1/organizations/custom-field/get', (_r, n) =>
      n === 0 ? { status: 429, body: { error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 1 } } } : { body: { fields: [] } },
    );
    const client = createClient({ apiKey: 'k', baseUrl: stub.url });
    const started = Date.now();
    await expect(client.organizations.getCustomFields()).resolves.toEqual({ fields: [] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(countTo('/v1/organizations/custom-field/get')).toBe(2);
  });

  it('429 longer than maxTryInSeconds throws RateLimitError at once, saying how long to wait', async () => {
    stub.on('/v1/definitions/activity/delete', () => ({ status: 429, body: { error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 120 } } }));
    const client = createClient({ apiKey: 'k', baseUrl: stub.url });
    const error = await client.definitions.deleteActivity({ activity_field_id: 'act:cm:x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ status: 429, tryInSeconds: 120 });
    expect(countTo('/v1/definitions/activity/delete')).toBe(1);
  });

  it('bad input is refused before any request is sent', async () => {
    const client = createClient({ apiKey: 'k', baseUrl: stub.url });
    const before = stub.received.length;
    const error = await client.person.merge({ people: [{ fields: { 'str::email': 42 } }] } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues[0]!.message).toContain('str::email: expected a string, got number');
    await expect(client.person.get({ filter: { '$str::sounds_like': { field_id: 'str::first', value: 'x' } } })).rejects.toThrow(
      /unknown filter operator "\$str::sounds_like"/,
    );
    await expect(client.activities.create({ activities: [{ activity_id: 'signed-up', fields: { 'str::email': 'a@b.c' } }] })).rejects.toThrow(
      /not an activity field ID/,
    );
    expect(stub.received.length).toBe(before);
  });

  it('a refused connection is a NetworkError', async () => {
    const closed = await startPlatformStub();
    const url = closed.url;
    await closed.close();
    const client = createClient({ apiKey: 'k', baseUrl: url, retry: false });
    await expect(client.tags.get()).rejects.toBeInstanceOf(NetworkError);
  });

  it('a fetch that throws a plain Error (as workerd does on a lost connection) is a NetworkError', async () => {
    const failing = (() => Promise.reject(new Error('Network connection lost'))) as unknown as typeof fetch;
    const client = createClient({ apiKey: 'k', baseUrl: 'http://127.0.0.1:9', fetch: failing, retry: false });
    const error = await client.tags.get().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as Error).message).toBe('POST http://127.0.0.1:9/v1/tags/get failed: no response (Network connection lost)');
  });

  it('a 200 whose body is not JSON says the base address is wrong', async () => {
    stub.on('/v1/accounts/contacts/add', () => ({ body: undefined }));
    const client = createClient({ apiKey: 'k', baseUrl: stub.url, retry: false });
    await expect(client.accounts.addContacts({ accounts_id: '10ab', inclusion_ids: ['00ab'] })).rejects.toThrow(/not JSON; check baseUrl/);
  });

  it('no answer within timeout is a TimeoutError', async () => {
    stub.on('/v1/person/subscriptions', () => new Promise((resolve) => setTimeout(() => resolve({ body: { people: [] } }), 500)));
    const client = createClient({ apiKey: 'k', baseUrl: stub.url, timeout: 100, retry: false });
    await expect(client.person.subscriptions({ people: [{ email: 'a@b.c' }] })).rejects.toBeInstanceOf(TimeoutError);
  });
});
