import { describe, expect, it } from 'vitest';
import { email, rejection, useEmulator } from './helpers.js';

const h = useEmulator({
  seed: {
    people: [
      { fields: { 'str::email': 'sub@example.com' }, audiences: {} },
      { fields: { 'str::email': 'unsub@example.com', 'bol::p': false } },
      { fields: { 'str::email': 'sms@example.com', 'bol::sp': true } },
      { fields: { 'str::email': 'out@example.com' } },
    ],
    audiences: [
      {
        id: 'aud-1',
        name: 'Newsletter',
        members: [
          { email: 'sub@example.com', subscribed: true },
          { email: 'unsub@example.com', subscribed: true },
          { email: 'sms@example.com', subscribed: false, sms_opted_in: true },
        ],
      },
    ],
  },
});

async function seedPeople(n: number) {
  for (let start = 0; start < n; start += 100) {
    const people = Array.from({ length: Math.min(100, n - start) }, (_, i) => ({
      fields: { 'str::email': email(start + i), 'str::first': `First${String(start + i).padStart(4, '0')}` },
    }));
    await h.client.person.merge({ people });
  }
}

describe('person/get', () => {
  it('pages to the end by offset: contacts null and an all-zero cursor past the end, meta totals', async () => {
    await seedPeople(120);
    const seen: string[] = [];
    let offset = 0;
    for (let guard = 0; guard < 10; guard++) {
      const page = await h.client.person.get({ limit: 50, offset, fields: ['str::email'] });
      expect(page.meta).toEqual({ total_contacts: 124, total_organizations: 0, total_matches: 124, total_subscribers: 123 });
      expect(page.offset).toBe(offset);
      seen.push(...page.contacts!.map((c) => c.id));
      if (!page.has_more) break;
      offset = page.next_offset;
    }
    expect(seen).toHaveLength(124);
    expect(new Set(seen).size).toBe(124);
    const past = await h.client.person.get({ offset: 124 });
    expect(past.contacts).toBeNull();
    expect(past.cursor_id).toBe('000000000000000000000000');
    expect(past.has_more).toBe(false);
  });

  it('pages to the end by cursor, and the client iterator sees everyone once', async () => {
    await seedPeople(130);
    const ids: string[] = [];
    let body: { limit: number; cursor_id?: string; offset?: number } = { limit: 40 };
    for (let guard = 0; guard < 10; guard++) {
      const page = await h.client.person.get(body);
      ids.push(...(page.contacts ?? []).map((c) => c.id));
      expect(page.cursor_id).toMatch(/^[0-9a-f]{24}$/);
      if (!page.has_more) break;
      body = { limit: 40, cursor_id: page.cursor_id };
    }
    expect(new Set(ids).size).toBe(134);
    const all: string[] = [];
    for await (const person of h.client.person.all({ limit: 33 })) all.push(person.id);
    expect(new Set(all).size).toBe(134);
  });

  it('a cursor survives a person created meanwhile (no repeats, no gaps)', async () => {
    await seedPeople(10);
    const first = await h.client.person.get({ limit: 5, sort_by_field_id: 'str::email', sort_order: 'asc', fields: ['str::email'] });
    await h.client.person.merge({ people: [{ fields: { 'str::email': 'aaa@example.com' } }] });
    const second = await h.client.person.get({
      limit: 5,
      sort_by_field_id: 'str::email',
      sort_order: 'asc',
      cursor_id: first.cursor_id,
      offset: first.next_offset,
      fields: ['str::email'],
    });
    const emails = [...first.contacts!, ...second.contacts!].map((c) => c.fields!['str::email']);
    expect(new Set(emails).size).toBe(10);
  });

  it('takes limit 500, and 501 or 0 as 50; a cursor that is not 24-hex is a 400', async () => {
    await seedPeople(520);
    expect((await h.client.person.get({ limit: 500 })).contacts).toHaveLength(500);
    expect((await h.client.person.get({ limit: 501 })).contacts).toHaveLength(50);
    expect((await h.client.person.get({ limit: 0 })).contacts).toHaveLength(50);
    expect((await h.client.person.get({})).contacts).toHaveLength(50);
    const bad = await h.call('/v1/person/get', { cursor_id: 'abc' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain('cursor_id');
  });

  it('sorts by a field, desc by default, empty values last', async () => {
    await h.client.person.merge({ people: ['b', 'c', 'a'].map((n) => ({ fields: { 'str::email': `${n}@x.com`, 'str::first': n.toUpperCase() } })) });
    const desc = await h.client.person.get({ sort_by_field_id: 'str::first', fields: ['str::first'] });
    expect(desc.contacts!.map((c) => c.fields!['str::first'])).toEqual(['C', 'B', 'A', null, null, null, null]);
    const asc = await h.client.person.get({ sort_by_field_id: 'str::first', sort_order: 'asc', fields: ['str::first'] });
    expect(asc.contacts!.slice(0, 3).map((c) => c.fields!['str::first'])).toEqual(['A', 'B', 'C']);
  });

  it('q searches name and email; type archived lists only archived people and refuses filters', async () => {
    const merged = await h.client.person.merge({ people: [{ fields: { 'str::email': 'jane.doe@example.com', 'str::first': 'Jane', 'str::last': 'Doe' } }] });
    expect((await h.client.person.get({ q: 'jane doe', fields: ['str::email'] })).contacts!.map((c) => c.fields!['str::email'])).toEqual([
      'jane.doe@example.com',
    ]);
    await h.client.person.archive({ inclusion_ids: [merged.people![0]!.person_id!] });
    const archived = await h.client.person.get({ type: 'archived', fields: ['str::email'] });
    expect(archived.contacts!.map((c) => c.id)).toEqual([merged.people![0]!.person_id]);
    expect((await h.client.person.get({ q: 'jane' })).contacts).toBeNull();
    const refused = await h.call('/v1/person/get', { type: 'archived', filter: { $has_any_value: { field_id: 'str::email' } } });
    expect(refused.status).toBe(400);
  });

  it('audience_id limits to members; audience_filter picks subscribers, unsubscribed, SMS subscribers', async () => {
    const emails = async (body: object) =>
      ((await h.client.person.get({ ...body, fields: ['str::email'] })).contacts ?? []).map((c) => c.fields!['str::email']).sort();
    expect(await emails({ audience_id: 'aud-1' })).toEqual(['sms@example.com', 'sub@example.com', 'unsub@example.com']);
    expect(await emails({ audience_id: 'aud-1', audience_filter: 'subscribers' })).toEqual(['sub@example.com']);
    expect(await emails({ audience_id: 'aud-1', audience_filter: 'unsubscribed' })).toEqual(['sms@example.com', 'unsub@example.com']);
    expect(await emails({ audience_id: 'aud-1', audience_filter: 'unsubscribed-from-audience' })).toEqual(['sms@example.com']);
    expect(await emails({ audience_id: 'aud-1', audience_filter: 'email-subscribers' })).toEqual(['sub@example.com', 'unsub@example.com']);
    expect(await emails({ audience_id: 'aud-1', audience_filter: 'sms-subscribers' })).toEqual(['sms@example.com']);
  });
});

describe('person/get-by-ids and person/subscriptions', () => {
  it('answers an object keyed by ID, leaving unknown IDs out; 150 field IDs pass, 151 are refused', async () => {
    const [a] = (await h.client.person.merge({ people: [{ fields: { 'str::email': 'g@example.com', 'str::first': 'G' } }] })).people!;
    const result = await h.client.person.getByIds({
      contact_ids: [a!.person_id!, '00aaaaaaaaaaaaaaaaaaaaaa'],
      fields: ['str::first', 'str::person_id', 'tags'],
    });
    expect(result).toEqual({ contacts: { [a!.person_id!]: { id: a!.person_id, fields: { 'str::first': 'G', 'str::person_id': a!.person_id, tags: [] } } } });
    const fields = Array.from({ length: 150 }, (_, i) => `str:cm:f${i}`);
    expect(Object.keys((await h.client.person.getByIds({ contact_ids: [a!.person_id!], fields })).contacts)).toHaveLength(1);
    const error = await rejection(h.loose.person.getByIds({ contact_ids: [a!.person_id!], fields: [...fields, 'str:cm:f150'] }));
    expect(error.status).toBe(400);
    expect(error.message).toContain('at most 150');
  });

  it('lists audiences and permissions by email, person_id or external_id', async () => {
    const result = await h.client.person.subscriptions({ people: [{ email: 'sms@example.com' }, { email: 'nobody@example.com' }] });
    expect(result.people[0]).toMatchObject({
      person_status: 'merged',
      email: 'sms@example.com',
      email_permissions: true,
      sms_permissions: true,
      subscriptions: [
        {
          audience_id: 'aud-1',
          audience_name: 'Newsletter',
          subscribed: false,
          sms_opted_in: true,
          member_from: expect.any(String),
          subscribed_from: expect.any(String),
        },
      ],
    });
    expect(result.people[0]!.person_id).toMatch(/^00[0-9a-f]{22}$/);
    expect(result.people[1]).toMatchObject({ person_status: 'not_found', subscriptions: [] });
    await h.client.person.merge({ people: [{ fields: { 'str::email': 'sub@example.com', 'str::ei': 'ext-sub' } }] });
    const id = result.people[0]!.person_id!;
    const byOther = await h.client.person.subscriptions({ people: [{ person_id: id }, { external_id: 'ext-sub' }] });
    expect(byOther.people.map((p) => p.email)).toEqual(['sms@example.com', 'sub@example.com']);
    expect(byOther.people[1]!.subscriptions.map((s) => s.subscribed)).toEqual([true]);
  });
});
