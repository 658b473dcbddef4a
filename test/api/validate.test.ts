import { describe, expect, it } from 'vitest';
import {
  ENDPOINT_LIST,
  ENDPOINTS,
  findEndpoint,
  isPlatformErrorBody,
  isRateLimitBody,
  isRelayErrorBody,
  platformError,
  rateLimitBody,
  relayError,
  validateRequest,
} from '../../src/api/index.js';
import { SAMPLE_BODIES } from '../fixtures/bodies.js';

const messages = (id: Parameters<typeof validateRequest>[0], body: unknown) => {
  const result = validateRequest(id, body);
  return result.ok ? [] : result.issues.map((issue) => issue.message);
};

describe('the endpoint table', () => {
  it('gives each endpoint its scope: read for retrieval, delete for the deletes, write for the rest', () => {
    const byScope = (scope: string) =>
      ENDPOINT_LIST.filter((e) => e.scope === scope)
        .map((e) => e.id)
        .sort();
    expect(byScope('delete')).toEqual(['accounts/delete', 'definitions/activity/delete', 'organizations/delete', 'person/delete']);
    expect(byScope('read')).toEqual([
      'accounts/custom-field/get',
      'organizations/custom-field/get',
      'organizations/get',
      'person/custom-field/get',
      'person/get',
      'person/get-by-ids',
      'person/subscriptions',
      'tags/get',
    ]);
    expect(byScope('write')).toHaveLength(17);
  });

  it('finds endpoints by exact method and path only', () => {
    expect(findEndpoint('POST', '/v1/person/merge')?.id).toBe('person/merge');
    expect(findEndpoint('delete', '/v1/person/delete')?.id).toBe('person/delete');
    expect(findEndpoint('GET', '/v1/person/merge')).toBeUndefined();
    expect(findEndpoint('POST', '/v1/person/merge/')).toBeUndefined();
    expect(findEndpoint('POST', '/v1/person/../person/merge')).toBeUndefined();
    expect(findEndpoint('POST', '/v1/__proto__')).toBeUndefined();
    expect(findEndpoint('POST', '/v2/person/merge')).toBeUndefined();
  });
});

describe('request validators', () => {
  it.each(ENDPOINT_LIST.map((e) => e.id))('accepts the sample body of %s', (id) => {
    expect(messages(id, SAMPLE_BODIES[id])).toEqual([]);
  });

  it('person/merge: 1 to 100 people, merge_by rules, strategies, clear_fields', () => {
    const person = { fields: { 'str::email': 'a@b.c' } };
    expect(messages('person/merge', { people: [] })).toEqual(['people: at least 1 entry']);
    expect(messages('person/merge', { people: Array(100).fill(person) })).toEqual([]);
    expect(messages('person/merge', { people: Array(101).fill(person) })[0]).toMatch(/at most 100 entries/);
    expect(messages('person/merge', { people: [person], merge_by: ['str::email', 'str::ei', 'str::first', 'str::last'] })).toEqual([
      'merge_by: at most 3 field IDs',
    ]);
    expect(messages('person/merge', { people: [person], merge_by: ['str::person_id', 'str::email'] })).toEqual([
      'merge_by: str::person_id must be the only entry',
    ]);
    expect(messages('person/merge', { people: [person], merge_strategy: 4 })[0]).toMatch(/merge_strategy must be 1/);
    expect(messages('person/merge', { people: [{ ...person, clear_fields: { 'str::first': true } }], merge_strategy: 1 })).toEqual([
      'clear_fields needs merge_strategy 2',
    ]);
    expect(messages('person/merge', { people: [{ fields: { 'str:o:name': 'x' } }] })[0]).toMatch(/not a person field ID/);
  });

  it('accounts/merge: merge_by is mandatory, 1 or 2 entries, the account ID alone', () => {
    const account = { fields: { 'str:o:name': 'Acme' } };
    expect(messages('accounts/merge', { accounts: [account] })[0]).toMatch(/merge_by/);
    expect(messages('accounts/merge', { accounts: [account], merge_by: ['str:o:name', 'str:o:website', 'str:o:industry'] })).toEqual([
      'merge_by: at most 2 field IDs for accounts',
    ]);
    expect(messages('accounts/merge', { accounts: [account], merge_by: ['accounts_id', 'str:o:name'] })).toEqual([
      'merge_by: the account ID field must be the only entry',
    ]);
    expect(messages('accounts/merge', { accounts: [account], merge_by: ['str:o:accounts_id'] })).toEqual([]);
  });

  it('activities/create: 16 kB per activity, 15 attributes, a person to attach to', () => {
    const event = { activity_id: 'act:cm:x', fields: { 'str::email': 'a@b.c' } };
    const attributes = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`str:cm:a${i}`, 'v']));
    expect(messages('activities/create', { activities: [{ ...event, attributes }] })[0]).toMatch(/at most 15 per activity/);
    expect(messages('activities/create', { activities: [{ ...event, attributes: { 'str:cm:big': 'x'.repeat(17_000) } }] })[0]).toMatch(/at most 16 kB/);
    expect(messages('activities/create', { activities: [{ activity_id: 'act:cm:x' }] })[0]).toMatch(/identify the person, or person_id/);
    expect(messages('activities/create', { activities: [{ activity_id: 'act:cm:x', person_id: '00ab' }] })).toEqual([]);
  });

  it('retrieval: cursor form, field lists ≤150, filters by operator, archived type alone', () => {
    expect(messages('person/get', { cursor_id: 'abc' })).toEqual(['cursor_id must be the 24-hex cursor of a previous response']);
    expect(messages('person/get-by-ids', { contact_ids: ['a'], fields: Array(150).fill('str::email') })).toEqual([]);
    expect(messages('person/get-by-ids', { contact_ids: ['a'], fields: Array(151).fill('str::email') })).toEqual(['fields: at most 150 field IDs']);
    expect(
      messages('person/get', { filter: { '$str::is': { field_id: 'str::email', value: 'a' }, '$str::ends': { field_id: 'str::email', value: 'b' } } })[0],
    ).toMatch(/exactly one operator key/);
    expect(messages('person/get', { filter: { $orgroup: [{ $andgroup: [{ '$int::between': { field_id: 'int:cm:n', value: [1, 2] } }] }] } })).toEqual([]);
    expect(messages('person/get', { type: 'archived', filter: { $has_any_value: { field_id: 'str::email' } } })[0]).toMatch(/only q is accepted/);
    expect(messages('organizations/get', { filter: { '$int::is': { field_id: 'int:o:employees', value: 3 } } })[0]).toMatch(
      /unknown filter operator "\$int::is"/,
    );
    expect(messages('person/get', { audience_filter: 'subscribers' })).toEqual(['audience_filter needs audience_id']);
  });

  it('archive/restore/delete need a selection; custom fields need values for selects; icon IDs are checked', () => {
    expect(messages('person/archive', {})).toEqual(['select records with inclusion_ids or all_rows_selected: true']);
    expect(messages('person/delete', { inclusion_ids: Array(101).fill('a') })[0]).toMatch(/at most 100 records per call/);
    expect(messages('person/custom-field/create', { type: 'multi_select', name: 'Colours' })).toEqual([
      'values is required for single_select and multi_select fields',
    ]);
    expect(messages('person/custom-field/create', { type: 'aggregate', name: 'x' })[0]).toMatch(/aggregate cannot be created/);
    expect(messages('definitions/activity/create', { name: 'x', icon_id: 'rocket' })[0]).toMatch(/icon_id must be one of/);
    expect(messages('accounts/contacts/add', { accounts_id: '10ab' })).toEqual(['name the people with inclusion_ids or filter']);
  });

  it('refuses bodies that are not objects, and bodies over 2 MB, naming the limit', () => {
    expect(messages('tags/get', [])).toEqual(['request body must be a JSON object']);
    expect(messages('tags/get', 'x')).toEqual(['request body must be a JSON object']);
    const result = validateRequest('tags/get', {}, ENDPOINTS['tags/get'].maxBytes + 1);
    expect(result.ok ? '' : result.issues[0]!.message).toMatch(/over the 2097152-byte \(2 MB\) limit/);
  });
});

describe('bodies that JSON allows but the platform does not', () => {
  it('refuses an array where an object belongs, instead of reading it as {"0": …}', () => {
    expect(messages('person/merge', { people: [{ fields: [] }] })).toEqual(['people[0].fields: fields must be an object keyed by field ID']);
    expect(messages('activities/create', { activities: [{ activity_id: 'act:cm:x', fields: { 'str::email': 'a@b.c' }, attributes: ['a'] }] })).toEqual([
      'activities[0].attributes: attributes must be an object keyed by attribute field ID',
    ]);
    expect(messages('person/merge', { people: [{ fields: { 'str::email': 'a@b.c' }, clear_fields: [true] }] })[0]).toMatch(/clear_fields must be an object/);
  });

  it('refuses a value or null where fields or attributes belong, and still checks each field of an object', () => {
    expect(messages('person/merge', { people: [{ fields: 'str::email' }] })).toEqual(['people[0].fields: fields must be an object keyed by field ID']);
    expect(messages('accounts/merge', { accounts: [{ fields: null }], merge_by: ['accounts_id'] })).toEqual([
      'accounts[0].fields: fields must be an object keyed by field ID',
    ]);
    expect(messages('activities/create', { activities: [{ activity_id: 'act:cm:x', fields: { 'str::email': 'a@b.c' }, attributes: 5 }] })).toEqual([
      'activities[0].attributes: attributes must be an object keyed by attribute field ID',
    ]);
    expect(messages('activities/create', { activities: [{ activity_id: 'act:cm:x', fields: { 'str::email': 'a@b.c', 'str:o:name': 'x' } }] })).toEqual([
      'activities[0].fields: "str:o:name" is not a person field ID',
    ]);
  });

  it('refuses prototype-named keys anywhere, naming where, rather than dropping their data silently', () => {
    const parsed = (json: string) => JSON.parse(json) as unknown;
    expect(messages('person/merge', parsed('{"people":[{"fields":{"str::email":"a@b.c","__proto__":{"x":1}}}]}'))).toEqual([
      'people[0].fields: key "__proto__" is not allowed',
    ]);
    expect(
      messages('activities/create', parsed('{"activities":[{"activity_id":"act:cm:x","fields":{"str::email":"a@b.c"},"attributes":{"constructor":"x"}}]}')),
    ).toEqual(['activities[0].attributes: key "constructor" is not allowed']);
    expect(messages('tags/get', parsed('{"prototype":1}'))).toEqual(['key "prototype" is not allowed']);
    expect(({} as Record<string, unknown>)['x']).toBeUndefined();
  });
});

describe('error shapes', () => {
  it('builds and recognises the platform, rate-limit and relay bodies', () => {
    const general = platformError(400, 'Bad request', [{ status: 'invalid', error: 'x' }], 'req-1');
    expect(general).toEqual({ request_id: 'req-1', code: 400, error: 'Bad request', details: [{ status: 'invalid', error: 'x' }] });
    expect(isPlatformErrorBody(general)).toBe(true);
    expect(rateLimitBody(10)).toEqual({ error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 10 } });
    expect(isRateLimitBody(rateLimitBody(3))).toBe(true);
    expect(isRelayErrorBody(relayError('origin_not_allowed', 'Origin https://x is not allowed'))).toBe(true);
    expect(isRelayErrorBody(general)).toBe(false);
  });
});
