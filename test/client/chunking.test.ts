import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startPlatformStub, type PlatformStub } from '../fixtures/platform-stub.js';

let stub: PlatformStub;
beforeAll(async () => {
  stub = await startPlatformStub();
  // Answers like the platform: one result per person, in input order, echoing the email as the id.
  stub.on('/v1/person/merge', (request) => ({
    body: {
      people: (request.body as { people: Array<{ fields: Record<string, string> }> }).people.map((p) => ({
        person_id: p.fields['str::email'],
        status: 'created',
      })),
    },
  }));
  stub.on('/v1/person/archive', (request) => ({
    body: { scheduled_contacts: 0, archived_contacts: (request.body as { inclusion_ids: string[] }).inclusion_ids.length },
  }));
});
afterAll(() => stub.close());

const people = (n: number) => Array.from({ length: n }, (_, i) => ({ fields: { 'str::email': `p${i}@example.com` } }));
const mergeCalls = () => stub.received.filter((r) => r.path === '/v1/person/merge');

describe('calls over 100 items are split and joined in order', () => {
  for (const [count, requests] of [
    [100, 1],
    [101, 2],
    [250, 3],
  ] as const) {
    it(`${count} people → ${requests} request(s), ${count} results in input order`, async () => {
      const before = mergeCalls().length;
      const client = createClient({ apiKey: 'k', baseUrl: stub.url });
      const result = await client.person.merge({ people: people(count), merge_by: ['str::email'] });
      const calls = mergeCalls().slice(before);
      expect(calls).toHaveLength(requests);
      for (const call of calls) {
        expect((call.body as { people: unknown[] }).people.length).toBeLessThanOrEqual(100);
        expect((call.body as { merge_by: string[] }).merge_by).toEqual(['str::email']);
      }
      expect(result.people?.map((p) => p.person_id)).toEqual(people(count).map((p) => p.fields['str::email']));
    });
  }

  it('keeps each request under the 2 MB payload limit even when 100 items would exceed it', async () => {
    const before = mergeCalls().length;
    const big = Array.from({ length: 100 }, (_, i) => ({ fields: { 'str::email': `b${i}@example.com`, 'obj:cm:blob': { text: 'x'.repeat(30_000) } } }));
    const result = await createClient({ apiKey: 'k', baseUrl: stub.url }).person.merge({ people: big });
    const calls = mergeCalls().slice(before);
    expect(calls.length).toBeGreaterThan(1);
    for (const call of calls) expect(JSON.stringify(call.body).length).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(result.people).toHaveLength(100);
  });

  it('adds up the counts of a chunked archive', async () => {
    const ids = Array.from({ length: 230 }, (_, i) => `00${String(i).padStart(22, '0')}`);
    const result = await createClient({ apiKey: 'k', baseUrl: stub.url }).person.archive({ inclusion_ids: ids } as never);
    expect(result).toEqual({ scheduled_contacts: 0, archived_contacts: 230 });
  });

  it('a chunk whose people all failed contributes its per-person details instead of failing the call', async () => {
    const local = await startPlatformStub();
    local.on('/v1/person/merge', (request, n) => {
      const batch = (request.body as { people: unknown[] }).people;
      return n === 1
        ? {
            status: 400,
            body: { request_id: 'r', code: 400, error: 'All failed', details: batch.map(() => ({ status: 'suppressed', error: 'Email is suppressed' })) },
          }
        : { body: { people: batch.map(() => ({ person_id: 'x', status: 'merged' })) } };
    });
    const result = await createClient({ apiKey: 'k', baseUrl: local.url }).person.merge({ people: people(150) });
    await local.close();
    expect(result.people?.slice(0, 100).every((p) => p.status === 'merged')).toBe(true);
    expect(result.people?.slice(100).every((p) => p.status === 'suppressed')).toBe(true);
    expect(result.people).toHaveLength(150);
  });
});
