import { describe, expect, it } from 'vitest';
import { HTTPError } from '../../src/client/index.js';
import { rejection, useEmulator } from './helpers.js';

const h = useEmulator({ seed: { suppression_list: ['blocked@example.com'] } });

const get = async (fields: string[], filter?: object) => (await h.client.person.get({ fields, ...(filter ? { filter } : {}), limit: 500 })).contacts ?? [];

describe('person/merge', () => {
  it('creates people with 24-hex IDs starting 00, in input order, then merges by email case-insensitively', async () => {
    const first = await h.client.person.merge({
      people: [{ fields: { 'str::email': 'ann@example.com', 'str::first': 'Ann' } }, { fields: { 'str::ei': 'ext-2', 'str::first': 'Bob' } }],
    });
    expect(first.people).toHaveLength(2);
    for (const r of first.people!) {
      expect(r.status).toBe('created');
      expect(r.person_id).toMatch(/^00[0-9a-f]{22}$/);
    }
    const again = await h.client.person.merge({
      people: [{ fields: { 'str::email': 'ANN@example.com', 'str::last': 'Lee' } }, { fields: { 'str::ei': 'ext-2' } }],
    });
    expect(again.people).toEqual([
      { person_id: first.people![0]!.person_id, status: 'merged' },
      { person_id: first.people![1]!.person_id, status: 'merged' },
    ]);
    const ann = (await h.client.person.getByIds({ contact_ids: [first.people![0]!.person_id!], fields: ['str::first', 'str::last', 'bol::p', 'bol::sp'] }))
      .contacts;
    expect(ann[first.people![0]!.person_id!]!.fields).toEqual({ 'str::first': 'Ann', 'str::last': 'Lee', 'bol::p': true, 'bol::sp': false });
  });

  it('normalises phones in both forms to {c, n} and stores integers ×1000', async () => {
    await h.client.person.createCustomField({ type: 'decimal', name: 'Score' });
    await h.client.person.merge({
      people: [
        { fields: { 'str::email': 'a@example.com', 'phn::phone': { phone: '+44 20 7946 0000', parse_with_country_code: true }, 'int:cm:score': 2.5 } },
        {
          fields: {
            'str::email': 'b@example.com',
            'phn::phone': { c: '33', n: '612345678' },
            'dtz::b': { year: 1990, month: 2, day: 28, timezone: 'Europe/Paris' },
            'geo::city': { name: 'Paris' },
          },
        },
      ],
    });
    const people = await get(['str::email', 'phn::phone', 'int:cm:score', 'dtz::b', 'geo::city']);
    const byEmail = Object.fromEntries(people.map((p) => [p.fields!['str::email'], p.fields!]));
    expect(byEmail['a@example.com']).toMatchObject({ 'phn::phone': { c: '44', n: '2079460000' }, 'int:cm:score': 2500 });
    expect(byEmail['b@example.com']).toMatchObject({
      'phn::phone': { c: '33', n: '612345678' },
      'dtz::b': { year: 1990, month: 2, day: 28, timezone: 'Europe/Paris' },
      'geo::city': { name: 'Paris' },
    });
  });

  it('marks bad entries invalid and merges the rest; all failed is a 400 with details per entry', async () => {
    const mixed = await h.loose.person.merge({
      people: [{ fields: { 'str::email': 'not-an-email' } }, { fields: { 'str::email': 'ok@example.com' } }, { fields: { 'str::first': 'No Key' } }],
    });
    expect(mixed.people![0]).toMatchObject({ status: 'invalid', error: expect.stringContaining('not an email address') });
    expect(mixed.people![1]).toMatchObject({ status: 'created' });
    expect(mixed.people![2]).toMatchObject({ status: 'invalid', error: expect.stringContaining('str::email or str::ei') });

    const raw = await h.call('/v1/person/merge', {
      people: [{ fields: { 'str::email': 'x' } }, { fields: { 'str:cm:undefined-field': 'v', 'str::email': 'y@example.com' } }],
    });
    expect(raw.status).toBe(400);
    expect(raw.body).toMatchObject({ code: 400, error: expect.any(String), request_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(raw.body.details).toHaveLength(2);
    expect(raw.body.details[1]).toMatchObject({ status: 'invalid', error: expect.stringContaining('custom-field/create') });
  });

  it('takes 1 to 100 people: 100 pass, 101 and 0 are refused', async () => {
    const hundred = Array.from({ length: 100 }, (_, i) => ({ fields: { 'str::email': `p${i}@example.com` } }));
    expect((await h.client.person.merge({ people: hundred })).people).toHaveLength(100);
    const over = await h.call('/v1/person/merge', { people: [...hundred, { fields: { 'str::email': 'x@example.com' } }] });
    expect(over.status).toBe(400);
    expect(over.body.error).toContain('at most 100');
    expect((await h.call('/v1/person/merge', { people: [] })).status).toBe(400);
  });

  it('merge_strategy 1 fills only empty fields, 2 overwrites and clears with null, 3 leaves people untouched but still creates', async () => {
    await h.client.person.merge({ people: [{ fields: { 'str::email': 'm@example.com', 'str::first': 'Old' } }] });
    await h.client.person.merge({ merge_strategy: 1, people: [{ fields: { 'str::email': 'm@example.com', 'str::first': 'New', 'str::last': 'Filled' } }] });
    expect((await get(['str::first', 'str::last']))[0]!.fields).toEqual({ 'str::first': 'Old', 'str::last': 'Filled' });
    await h.client.person.merge({ merge_strategy: 2, people: [{ fields: { 'str::email': 'm@example.com', 'str::first': 'New', 'str::last': null } }] });
    expect((await get(['str::first', 'str::last']))[0]!.fields).toEqual({ 'str::first': 'New', 'str::last': null });
    const third = await h.client.person.merge({
      merge_strategy: 3,
      people: [{ fields: { 'str::email': 'm@example.com', 'str::first': 'Ignored' } }, { fields: { 'str::email': 'new@example.com' } }],
    });
    expect(third.people!.map((p) => p.status)).toEqual(['merged', 'created']);
    expect((await get(['str::first'], { '$str::is': { field_id: 'str::email', value: 'm@example.com' } }))[0]!.fields).toEqual({ 'str::first': 'New' });
  });

  it('merge_by narrows the match; find_strategy 0 falls back, 1 does not, 2 needs all keys to agree', async () => {
    const [a] = (await h.client.person.merge({ people: [{ fields: { 'str::email': 'a@example.com', 'str::ei': 'A' } }] })).people!;
    // only str::ei counts: a new ei creates a new person even though the email exists
    const byEi = await h.client.person.merge({ merge_by: ['str::ei'], people: [{ fields: { 'str::email': 'a@example.com', 'str::ei': 'B' } }] });
    expect(byEi.people![0]!.status).toBe('created');
    // strategy 0: first key (ei 'Z') has no match, falls back to email
    const any = await h.client.person.merge({
      merge_by: ['str::ei', 'str::email'],
      find_strategy: 0,
      people: [{ fields: { 'str::ei': 'Z', 'str::email': 'a@example.com' } }],
    });
    expect(any.people![0]).toEqual({ person_id: a!.person_id, status: 'merged' });
    // strategy 1: the first key was given and matches nobody, so no fallback: created
    const next = await h.client.person.merge({
      merge_by: ['str::ei', 'str::email'],
      find_strategy: 1,
      people: [{ fields: { 'str::ei': 'Y', 'str::email': 'a@example.com' } }],
    });
    expect(next.people![0]!.status).toBe('created');
    // strategy 1 with the first key absent uses the second
    const absent = await h.client.person.merge({
      merge_by: ['str::ei', 'str::email'],
      find_strategy: 1,
      people: [{ fields: { 'str::email': 'a@example.com' } }],
    });
    expect(absent.people![0]).toEqual({ person_id: a!.person_id, status: 'merged' });
    // strategy 2: ei 'A' and this email belong to the same person → merged; a mismatch → created
    const all = await h.client.person.merge({
      merge_by: ['str::ei', 'str::first'],
      find_strategy: 2,
      people: [{ fields: { 'str::ei': 'A', 'str::first': 'Zed' } }],
    });
    expect(all.people![0]!.status).toBe('created');
  });

  it('merge_by_alt_fields matches the value against alternate fields', async () => {
    await h.client.person.createCustomField({ type: 'text', name: 'Work email' });
    const [a] = (await h.client.person.merge({ people: [{ fields: { 'str::email': 'home@example.com', 'str:cm:work-email': 'work@example.com' } }] })).people!;
    const alt = await h.client.person.merge({
      merge_by: ['str::email'],
      merge_by_alt_fields: { 'str::email': ['str:cm:work-email'] },
      people: [{ fields: { 'str::email': 'work@example.com', 'str::first': 'W' } }],
    });
    expect(alt.people![0]).toEqual({ person_id: a!.person_id, status: 'merged' });
  });

  it('merges by str::person_id only with skip_non_existing, and never creates', async () => {
    const [a] = (await h.client.person.merge({ people: [{ fields: { 'str::email': 'id@example.com' } }] })).people!;
    const refused = await h.call('/v1/person/merge', {
      merge_by: ['str::person_id'],
      people: [{ fields: { 'str::person_id': a!.person_id, 'str::first': 'X' } }],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain('skip_non_existing');
    const ok = await h.client.person.merge({
      merge_by: ['str::person_id'],
      skip_non_existing: true,
      people: [
        { fields: { 'str::person_id': a!.person_id, 'str::first': 'X' } },
        { fields: { 'str::person_id': '00ffffffffffffffffffffff', 'str::first': 'Y' } },
      ],
    });
    expect(ok.people![0]).toEqual({ person_id: a!.person_id, status: 'merged' });
    expect(ok.people![1]!.status).toBe('invalid');
    expect(h.running.emulator.state.people.size).toBe(1);
  });

  it('skip_non_existing updates existing people only', async () => {
    await h.client.person.merge({ people: [{ fields: { 'str::email': 'here@example.com' } }] });
    const result = await h.client.person.merge({
      skip_non_existing: true,
      people: [{ fields: { 'str::email': 'here@example.com', 'str::first': 'H' } }, { fields: { 'str::email': 'absent@example.com' } }],
    });
    expect(result.people!.map((p) => p.status)).toEqual(['merged', 'invalid']);
    expect(h.running.emulator.state.people.size).toBe(1);
  });

  it('clear_fields empties a field first, so a multi-select is replaced instead of added to', async () => {
    await h.client.person.createCustomField({ type: 'multi_select', name: 'Colors', values: ['red', 'green', 'blue'] });
    await h.client.person.merge({ people: [{ fields: { 'str::email': 'c@example.com', 'str:cm:colors': ['red'] } }] });
    await h.client.person.merge({ people: [{ fields: { 'str::email': 'c@example.com', 'str:cm:colors': ['green'] } }] });
    expect((await get(['str:cm:colors']))[0]!.fields).toEqual({ 'str:cm:colors': ['red', 'green'] });
    await h.client.person.merge({
      people: [{ fields: { 'str::email': 'c@example.com', 'str:cm:colors': ['blue'] }, clear_fields: { 'str:cm:colors': true } }],
    });
    expect((await get(['str:cm:colors']))[0]!.fields).toEqual({ 'str:cm:colors': ['blue'] });
    const bad = await h.client.person.merge({
      people: [{ fields: { 'str::email': 'c2@example.com', 'str:cm:colors': ['purple'] } }, { fields: { 'str::email': 'c3@example.com' } }],
    });
    expect(bad.people![0]).toMatchObject({ status: 'invalid', error: expect.stringContaining('red, green, blue') });
  });

  it('records the unsubscribe context message, "Unsubscribed via API" unless one is given', async () => {
    await h.client.person.merge({ people: [{ fields: { 'str::email': 'u@example.com' } }, { fields: { 'str::email': 'v@example.com' } }] });
    await h.client.person.merge({
      people: [
        { fields: { 'str::email': 'u@example.com', 'bol::p': false } },
        { fields: { 'str::email': 'v@example.com', 'bol::p': false, 'str::u-ctx': 'Clicked unsubscribe' } },
      ],
    });
    const people = await get(['str::email', 'bol::p', 'str::u-ctx'], { '$bol::is': { field_id: 'bol::p', value: false } });
    expect(people.map((p) => p.fields).sort((a, b) => String(a!['str::email']).localeCompare(String(b!['str::email'])))).toEqual([
      { 'str::email': 'u@example.com', 'bol::p': false, 'str::u-ctx': 'Unsubscribed via API' },
      { 'str::email': 'v@example.com', 'bol::p': false, 'str::u-ctx': 'Clicked unsubscribe' },
    ]);
  });

  it('applies tags and unset_tags, creating missing tags', async () => {
    await h.client.person.merge({ people: [{ fields: { 'str::email': 't@example.com' }, tags: ['trial', 'vip'] }] });
    await h.client.person.merge({ people: [{ fields: { 'str::email': 't@example.com' }, tags: ['paid'], unset_tags: ['trial', 'never-held'] }] });
    expect((await get(['tags']))[0]!.fields).toEqual({ tags: ['vip', 'paid'] });
    expect((await h.client.tags.get({})).map((t) => t.name).sort()).toEqual(['paid', 'trial', 'vip']);
  });

  it('skips suppressed emails with status suppressed', async () => {
    const result = await h.client.person.merge({
      suppression_list_field_id: 'str::email',
      people: [{ fields: { 'str::email': 'Blocked@example.com' } }, { fields: { 'str::email': 'fine@example.com' } }],
    });
    expect(result.people![0]).toEqual({ status: 'suppressed', error: 'Email is suppressed' });
    expect(result.people![1]!.status).toBe('created');
  });

  it('answers async merges with a queued confirmation and still stores them', async () => {
    const result = await h.client.person.merge({ async: true, people: [{ fields: { 'str::email': 'q@example.com' } }] });
    expect(result).toEqual({ status: 'queued', queued: 1 });
    expect(h.running.emulator.state.peopleBy('str::email', 'q@example.com')).toHaveLength(1);
  });

  it('stores the location; address lookup is refused below the business plan', async () => {
    await h.client.person.merge({
      people: [{ fields: { 'str::email': 'l@example.com' }, location: { address: { address: '10 Downing Street, London', country: 'United Kingdom' } } }],
    });
    const person = h.running.emulator.state.peopleBy('str::email', 'l@example.com')[0]!;
    expect(person.location).toMatchObject({ source: 'address', city_name: 'London' });
    expect(h.running.emulator.state.addressLookups).toBe(1);
    h.running.emulator.options.plan = 'professional';
    try {
      const error = await rejection(
        h.client.person.merge({ people: [{ fields: { 'str::email': 'l2@example.com' }, location: { address: { address: 'Paris' } } }] }),
      );
      expect(error).toBeInstanceOf(HTTPError);
      expect(error.details[0].error).toContain('business plan');
    } finally {
      h.running.emulator.options.plan = 'business';
    }
  });

  it('refuses archived people until restored', async () => {
    const [a] = (await h.client.person.merge({ people: [{ fields: { 'str::email': 'arch@example.com' } }] })).people!;
    await h.client.person.archive({ inclusion_ids: [a!.person_id!] });
    const error = await rejection(h.client.person.merge({ people: [{ fields: { 'str::email': 'arch@example.com', 'str::first': 'A' } }] }));
    expect(error.status).toBe(400);
    expect(error.details[0].error).toContain('archived');
  });
});
