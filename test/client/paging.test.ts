import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startPlatformStub, type PlatformStub } from '../fixtures/platform-stub.js';

const TOTAL = 120;
const ids = Array.from({ length: TOTAL }, (_, i) => `00${i.toString(16).padStart(22, '0')}`);
const ZERO = '0'.repeat(24);

let stub: PlatformStub;
beforeAll(async () => {
  stub = await startPlatformStub();
  // Pages like the platform: cursor = id of the last record returned; past the end, contacts null and a zero cursor.
  stub.on('/v1/person/get', (request) => {
    const body = request.body as { limit?: number; cursor_id?: string; offset?: number };
    const limit = body.limit ?? 50;
    const start = body.cursor_id ? ids.indexOf(body.cursor_id) + 1 : (body.offset ?? 0);
    const page = ids.slice(start, start + limit);
    const meta = { total_contacts: TOTAL, total_organizations: 0, total_matches: TOTAL, total_subscribers: 0 };
    if (page.length === 0) return { body: { contacts: null, meta, offset: start, next_offset: start, cursor_id: ZERO, has_more: false } };
    return {
      body: {
        contacts: page.map((id) => ({ id, fields: {} })),
        meta,
        offset: start,
        next_offset: start + page.length,
        cursor_id: page.at(-1),
        has_more: start + page.length < TOTAL,
      },
    };
  });
});
afterAll(() => stub.close());

describe('paging helpers', () => {
  it('person.all yields every person once, in order, across pages', async () => {
    const client = createClient({ apiKey: 'k', baseUrl: stub.url });
    const seen: string[] = [];
    for await (const person of client.person.all({ limit: 50 })) seen.push(person.id);
    expect(seen).toEqual(ids);
  });

  it('person.pages passes next_offset and cursor_id forward and stops when has_more is false', async () => {
    const before = stub.received.length;
    const client = createClient({ apiKey: 'k', baseUrl: stub.url });
    const sizes: number[] = [];
    for await (const page of client.person.pages({ limit: 50, fields: ['str::email'] })) sizes.push(page.contacts?.length ?? 0);
    expect(sizes).toEqual([50, 50, 20]);
    const bodies = stub.received.slice(before).map((r) => r.body as Record<string, unknown>);
    expect(bodies[1]).toMatchObject({ offset: 50, cursor_id: ids[49], fields: ['str::email'] });
    expect(bodies[2]).toMatchObject({ offset: 100, cursor_id: ids[99] });
  });

  it('organizations.all pages organizations the same way', async () => {
    stub.on('/v1/organizations/get', (request) => {
      const offset = (request.body as { offset?: number }).offset ?? 0;
      const all = ['10a', '10b', '10c'].map((id) => `${id}${'0'.repeat(21)}`);
      const page = all.slice(offset, offset + 2);
      return {
        body: {
          organizations: page.map((id) => ({ id })),
          meta: {},
          offset,
          next_offset: offset + page.length,
          cursor_id: ZERO,
          has_more: offset + page.length < all.length,
        },
      };
    });
    const client = createClient({ apiKey: 'k', baseUrl: stub.url });
    const seen: string[] = [];
    for await (const org of client.organizations.all({ limit: 2 })) seen.push(org.id);
    expect(seen).toHaveLength(3);
  });
});
