import { beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from './helpers.js';

const NOW = Date.parse('2026-06-15T12:00:00Z');
const h = useEmulator({
  now: () => NOW,
  seed: {
    audiences: [{ id: 'aud-1', name: 'News' }],
    custom_fields: {
      person: [
        { id: 'int:cm:age', name: 'Age', display_type: 'integer', liquid_name: 'people.custom.age', track_changes: false },
        {
          id: 'str:cm:colors',
          name: 'Colors',
          display_type: 'multi_select',
          liquid_name: 'people.custom.colors',
          dic_items: ['red', 'green', 'blue'],
          track_changes: false,
        },
      ],
      account: [],
    },
  },
});

beforeEach(async () => {
  await h.client.person.merge({
    people: [
      {
        fields: {
          'str::email': 'ann@example.com',
          'str::first': 'Ann',
          'str::last': 'Lee',
          'int:cm:age': 30,
          'bol::gdpr': true,
          'dtz::b': { year: 1990, month: 6, day: 15 },
          'geo::city': { name: 'Paris' },
          'phn::phone': { c: '33', n: '612345678' },
          'str:cm:colors': ['red', 'green'],
          'bol::sp': true,
        },
        tags: ['vip', 'trial'],
        location: { custom: { city_name: 'Paris', lat: 48.8566, lng: 2.3522 } },
      },
      {
        fields: {
          'str::email': 'bob@test.org',
          'str::first': 'Bob',
          'int:cm:age': 45,
          'bol::gdpr': false,
          'dtz::b': { year: 1981, month: 6, day: 20 },
          'geo::city': { name: 'London' },
          'phn::phone': { c: '44', n: '2079460000' },
          'str:cm:colors': ['blue'],
          'bol::p': false,
        },
        tags: ['trial'],
        location: { source_ip: '198.51.100.7' },
      },
      {
        fields: { 'str::email': 'cat@example.com', 'str::first': '', 'dtz::b': { year: 2020, month: 1, day: 1 }, 'int:cm:age': 0 },
        location: { source_ip: '203.0.113.5' },
      },
      { fields: { 'str::email': 'dan@example.com', 'str::last': null } },
    ],
  });
  const state = h.running.emulator.state;
  const ann = state.peopleBy('str::email', 'ann@example.com')[0]!;
  const bob = state.peopleBy('str::email', 'bob@test.org')[0]!;
  ann.audiences['aud-1'] = { member_from: '2026-01-01T00:00:00Z', subscribed: true, subscribed_from: '2026-01-01T00:00:00Z', sms_opted_in: true };
  bob.audiences['aud-1'] = { member_from: '2026-01-01T00:00:00Z', subscribed: true, subscribed_from: '2026-01-01T00:00:00Z', sms_opted_in: false };
  state.touch();
});

async function who(filter: object): Promise<string[]> {
  const page = await h.client.person.get({ filter, fields: ['str::email'], limit: 500 });
  return (page.contacts ?? []).map((c) => String(c.fields!['str::email']).split('@')[0]!).sort();
}

const f = (op: string, field_id: string | undefined, value?: unknown) => ({
  [op]: { ...(field_id ? { field_id } : {}), ...(value !== undefined ? { value } : {}) },
});

const CASES: Array<[string, object, string[]]> = [
  // string
  ['$str::is ignores case', f('$str::is', 'str::first', 'ann'), ['ann']],
  ['$str::is any of an array', f('$str::is', 'str::first', ['Ann', 'Bob']), ['ann', 'bob']],
  ['$str::is_not also matches the empty', f('$str::is_not', 'str::first', 'Ann'), ['bob', 'cat', 'dan']],
  ['$str::contains', f('$str::contains', 'str::email', 'example'), ['ann', 'cat', 'dan']],
  ['$str::does_not_contains', f('$str::does_not_contains', 'str::email', 'example'), ['bob']],
  ['$str::ends', f('$str::ends', 'str::email', '.org'), ['bob']],
  ['$str::greater_than', f('$str::greater_than', 'str::first', 'azz'), ['bob']],
  ['$str::less_than', f('$str::less_than', 'str::first', 'b'), ['ann', 'cat']],
  ['$str::between', f('$str::between', 'str::email', ['b', 'cz']), ['bob', 'cat']],
  // list / set
  ['$str::list_contains', f('$str::list_contains', 'str:cm:colors', 'green'), ['ann']],
  ['$str::list_does_not_contains', f('$str::list_does_not_contains', 'str:cm:colors', 'green'), ['bob', 'cat', 'dan']],
  ['$str::list_contains_more_than', f('$str::list_contains_more_than', 'str:cm:colors', 1), ['ann']],
  ['$str::list_contains_less_than', f('$str::list_contains_less_than', 'str:cm:colors', 2), ['bob', 'cat', 'dan']],
  ['$str::list_has_exactly', f('$str::list_has_exactly', 'str:cm:colors', 1), ['bob']],
  ['$str::list_first_item_is', f('$str::list_first_item_is', 'str:cm:colors', 'red'), ['ann']],
  ['$str::list_first_item_is_not', f('$str::list_first_item_is_not', 'str:cm:colors', 'red'), ['bob', 'cat', 'dan']],
  ['$str::list_first_item_contains', f('$str::list_first_item_contains', 'str:cm:colors', 'lu'), ['bob']],
  ['$str::list_first_item_does_not_contains', f('$str::list_first_item_does_not_contains', 'str:cm:colors', 'e'), ['cat', 'dan']],
  ['$str::list_last_item_is', f('$str::list_last_item_is', 'str:cm:colors', 'green'), ['ann']],
  ['$str::list_last_item_is_not', f('$str::list_last_item_is_not', 'str:cm:colors', 'green'), ['bob', 'cat', 'dan']],
  ['$str::list_last_item_contains', f('$str::list_last_item_contains', 'str:cm:colors', 'ee'), ['ann']],
  ['$str::list_last_item_does_not_contains', f('$str::list_last_item_does_not_contains', 'str:cm:colors', 'ee'), ['bob', 'cat', 'dan']],
  ['$str::set_contains on tags', f('$str::set_contains', 'tags', 'vip'), ['ann']],
  ['$str::set_contains_any', f('$str::set_contains_any', 'tags', ['vip', 'trial']), ['ann', 'bob']],
  ['$str::set_does_not_contains', f('$str::set_does_not_contains', 'tags', 'trial'), ['cat', 'dan']],
  ['$str::set_contains_more_than', f('$str::set_contains_more_than', 'tags', 1), ['ann']],
  ['$str::set_contains_less_than', f('$str::set_contains_less_than', 'tags', 1), ['cat', 'dan']],
  ['$str::set_has_exactly', f('$str::set_has_exactly', 'tags', 1), ['bob']],
  ['$str::set_is (any order)', f('$str::set_is', 'tags', ['trial', 'vip']), ['ann']],
  ['$str::set_is_not', f('$str::set_is_not', 'tags', ['trial']), ['ann', 'cat', 'dan']],
  ['$str::set_first_item_is', f('$str::set_first_item_is', 'tags', 'vip'), ['ann']],
  ['$str::set_first_item_is_not', f('$str::set_first_item_is_not', 'tags', 'vip'), ['bob', 'cat', 'dan']],
  ['$str::set_first_item_contains', f('$str::set_first_item_contains', 'tags', 'ri'), ['bob']],
  ['$str::set_first_item_does_not_contains', f('$str::set_first_item_does_not_contains', 'tags', 'ri'), ['ann', 'cat', 'dan']],
  ['$str::set_last_item_contains', f('$str::set_last_item_contains', 'tags', 'tri'), ['ann', 'bob']],
  // integer (stored ×1000)
  ['$int::is', f('$int::is', 'int:cm:age', 30000), ['ann']],
  ['$int::is_not', f('$int::is_not', 'int:cm:age', 30000), ['bob', 'cat', 'dan']],
  ['$int::greater_than', f('$int::greater_than', 'int:cm:age', 30000), ['bob']],
  ['$int::less_than', f('$int::less_than', 'int:cm:age', 30000), ['cat']],
  ['$int::between', f('$int::between', 'int:cm:age', [0, 30000]), ['ann', 'cat']],
  ['$int::not_between', f('$int::not_between', 'int:cm:age', [0, 30000]), ['bob']],
  // boolean
  ['$bol::is true', f('$bol::is', 'bol::gdpr', true), ['ann']],
  ['$bol::is false', f('$bol::is', 'bol::gdpr', false), ['bob']],
  ['$bol::is reads the email permission default', f('$bol::is', 'bol::p', true), ['ann', 'cat', 'dan']],
  // presence: 0 and '' have a value, null has none
  ['$has_any_value matches 0', f('$has_any_value', 'int:cm:age'), ['ann', 'bob', 'cat']],
  ['$has_any_value matches the empty string', f('$has_any_value', 'str::first'), ['ann', 'bob', 'cat']],
  ['$has_no_value matches null', f('$has_no_value', 'str::last'), ['bob', 'cat', 'dan']],
  // date (today is 2026-06-15)
  ['$dtz::absolute_after', f('$dtz::absolute_after', 'dtz::b', '2000-01-01'), ['cat']],
  ['$dtz::absolute_before', f('$dtz::absolute_before', 'dtz::b', '1985-01-01'), ['bob']],
  ['$dtz::absolute_on', f('$dtz::absolute_on', 'dtz::b', '1990-06-15'), ['ann']],
  ['$dtz::absolute_between', f('$dtz::absolute_between', 'dtz::b', { from: '1980-01-01', to: '1991-01-01' }), ['ann', 'bob']],
  ['$dtz::age_exactly', f('$dtz::age_exactly', 'dtz::b', 36), ['ann']],
  ['$dtz::age_less_than', f('$dtz::age_less_than', 'dtz::b', 10), ['cat']],
  ['$dtz::age_more_than', f('$dtz::age_more_than', 'dtz::b', 40), ['bob']],
  ['$dtz::anniversary', f('$dtz::anniversary', 'dtz::b'), ['ann']],
  ['$dtz::occurs_in', f('$dtz::occurs_in', 'dtz::b', 5), ['bob']],
  ['$dtz::occurs_in_less_than', f('$dtz::occurs_in_less_than', 'dtz::b', 6), ['ann', 'bob']],
  ['$dtz::occurs_in_more_than', f('$dtz::occurs_in_more_than', 'dtz::b', 6), ['cat']],
  ['$dtz::relative_exactly', f('$dtz::relative_exactly', 'dtz::b', 2357), ['cat']],
  ['$dtz::relative_less_than', f('$dtz::relative_less_than', 'dtz::b', { amount: 7, unit: 'years', direction: 'ago' }), ['cat']],
  ['$dtz::relative_more_than', f('$dtz::relative_more_than', 'dtz::b', { amount: 40, unit: 'years', direction: 'ago' }), ['bob']],
  // geo and proximity (the IP is preferred; 198.51.100.x is Sydney, 203.0.113.x New York)
  ['$geo::is', f('$geo::is', 'geo::city', 'paris'), ['ann']],
  ['$geo::is falls back to the located city', f('$geo::is', 'geo::city', 'New York'), ['cat']],
  ['$geo::is_not', f('$geo::is_not', 'geo::city', ['Paris', 'London']), ['cat', 'dan']],
  ['$proximity_is_within', f('$proximity_is_within', 'geo::city', { lat: 48.85, lng: 2.35, radius: 50, unit: 'km' }), ['ann']],
  ['$proximity_is_within (miles, Sydney)', f('$proximity_is_within', 'geo::city', { lat: -33.87, lng: 151.21, radius: 10, unit: 'mi' }), ['bob']],
  ['$proximity_is_not_within', f('$proximity_is_not_within', 'geo::city', { lat: 48.85, lng: 2.35, radius: 50 }), ['bob', 'cat']],
  // phone
  ['$phn::iis', f('$phn::iis', 'phn::phone', '+44 20 7946 0000'), ['bob']],
  ['$phn::iis_not', f('$phn::iis_not', 'phn::phone', { c: '44', n: '2079460000' }), ['ann', 'cat', 'dan']],
  ['$phn::starts', f('$phn::starts', 'phn::phone', '+336'), ['ann']],
  ['$phn::in_iso2_country_codes', f('$phn::in_iso2_country_codes', 'phn::phone', ['FR', 'de']), ['ann']],
  // audience and permission
  ['$is_member_of', f('$is_member_of', undefined, 'aud-1'), ['ann', 'bob']],
  ['$is_not_member_of', f('$is_not_member_of', undefined, 'aud-1'), ['cat', 'dan']],
  ['$is_subscriber_of (bob is globally unsubscribed)', f('$is_subscriber_of', undefined, 'aud-1'), ['ann']],
  ['$is_not_subscriber_of', f('$is_not_subscriber_of', undefined, 'aud-1'), ['bob', 'cat', 'dan']],
  ['$is_opted_in (SMS, global)', f('$is_opted_in', undefined), ['ann']],
  ['$is_opted_out', f('$is_opted_out', undefined), ['bob', 'cat', 'dan']],
  ['$is_push_opted_in', f('$is_push_opted_in', undefined), []],
  ['$is_push_opted_out', f('$is_push_opted_out', undefined), ['ann', 'bob', 'cat', 'dan']],
  // groups nest
  ['$andgroup', { $andgroup: [f('$str::contains', 'str::email', 'example'), f('$has_any_value', 'int:cm:age')] }, ['ann', 'cat']],
  [
    '$orgroup in $andgroup',
    { $andgroup: [f('$has_any_value', 'str::email'), { $orgroup: [f('$str::is', 'str::first', 'Bob'), f('$int::is', 'int:cm:age', 0)] }] },
    ['bob', 'cat'],
  ],
];

describe('person/get filters, operator by operator', () => {
  it.each(CASES)('%s', async (_name, filter, expected) => {
    expect(await who(filter)).toEqual(expected);
  });

  it('$id_is, $id_is_not, $id_set_is and $id_set_is_not match person IDs, or a field such as u4s::t', async () => {
    const ann = h.running.emulator.state.peopleBy('str::email', 'ann@example.com')[0]!;
    const bob = h.running.emulator.state.peopleBy('str::email', 'bob@test.org')[0]!;
    expect(await who(f('$id_is', undefined, ann.id))).toEqual(['ann']);
    expect(await who(f('$id_is_not', undefined, ann.id))).toEqual(['bob', 'cat', 'dan']);
    expect(await who(f('$id_set_is', undefined, [ann.id, bob.id]))).toEqual(['ann', 'bob']);
    expect(await who(f('$id_set_is_not', undefined, [ann.id, bob.id]))).toEqual(['cat', 'dan']);
    const vip = (await h.client.tags.get({ q: 'vip' }))[0]!;
    expect(await who(f('$id_is', 'u4s::t', vip.id))).toEqual(['ann']);
  });

  it('$act operators read the activity history', async () => {
    await h.client.definitions.createActivity({ name: 'Signed up', attributes: [{ name: 'Plan', display_type: 'text' }] });
    await h.client.activities.create({
      activities: [
        {
          activity_id: 'act:cm:signed-up',
          fields: { 'str::email': 'ann@example.com' },
          attributes: { 'str:cm:plan': 'free' },
          created: '2026-06-01T00:00:00Z',
        },
        { activity_id: 'act:cm:signed-up', fields: { 'str::email': 'ann@example.com' }, attributes: { 'str:cm:plan': 'pro' }, created: '2026-06-14T00:00:00Z' },
        { activity_id: 'act:cm:signed-up', fields: { 'str::email': 'bob@test.org' }, attributes: { 'str:cm:plan': 'pro' }, created: '2026-05-01T00:00:00Z' },
      ],
    });
    const act = (op: string, value?: object) => f(op, 'act:cm:signed-up', value);
    expect(await who(act('$act::has_occurred'))).toEqual(['ann', 'bob']);
    expect(await who(act('$act::has_occurred', { within_days: 7 }))).toEqual(['ann']);
    expect(await who(act('$act::has_not_occurred'))).toEqual(['cat', 'dan']);
    expect(await who(act('$act::first', { attributes: { 'str:cm:plan': 'pro' } }))).toEqual(['bob']);
    expect(await who(act('$act::last', { attributes: { 'str:cm:plan': 'pro' } }))).toEqual(['ann', 'bob']);
    expect(await who(act('$act::has_occurred', { after: '2026-05-15T00:00:00Z', before: '2026-06-10T00:00:00Z' }))).toEqual(['ann']);
  });

  it('an unknown operator is a 400 naming it; a bad value names the operator and the shape', async () => {
    const unknown = await h.call('/v1/person/get', { filter: { $andgroup: [{ '$str::sounds_like': { field_id: 'str::first', value: 'x' } }] } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toContain('$str::sounds_like');
    const bad = await h.call('/v1/person/get', { filter: f('$int::between', 'int:cm:age', 'ten') });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain('$int::between');
  });

  it('a filter combines with q, fields and sort', async () => {
    const page = await h.client.person.get({
      filter: f('$has_any_value', 'int:cm:age'),
      q: 'example',
      sort_by_field_id: 'int:cm:age',
      sort_order: 'desc',
      fields: ['str::email', 'int:cm:age'],
    });
    expect(page.contacts!.map((c) => c.fields)).toEqual([
      { 'str::email': 'ann@example.com', 'int:cm:age': 30000 },
      { 'str::email': 'cat@example.com', 'int:cm:age': 0 },
    ]);
    expect(page.meta.total_matches).toBe(2);
  });
});
