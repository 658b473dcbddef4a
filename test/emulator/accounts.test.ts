import { describe, expect, it } from 'vitest';
import { email, rejection, useEmulator } from './helpers.js';

const h = useEmulator();

async function people(n: number, offset = 0): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < n; start += 100) {
    const batch = Array.from({ length: Math.min(100, n - start) }, (_, i) => ({ fields: { 'str::email': email(offset + start + i) } }));
    ids.push(...(await h.client.person.merge({ people: batch })).people!.map((p) => p.person_id!));
  }
  return ids;
}

const account = async (name: string, extra: object = {}) =>
  (await h.client.accounts.merge({ merge_by: ['str:o:name'], accounts: [{ fields: { 'str:o:name': name, ...extra } }] })).accounts![0]!.account_id!;

describe('accounts/merge', () => {
  it('creates accounts with IDs starting 10 and merges by name; merge_by is mandatory', async () => {
    const created = await h.client.accounts.merge({
      merge_by: ['str:o:name'],
      accounts: [{ fields: { 'str:o:name': 'Acme', 'int:o:employees': 12 }, tags: ['customer'] }],
    });
    expect(created.accounts).toEqual([{ account_id: expect.stringMatching(/^10[0-9a-f]{22}$/), status: 'created' }]);
    const merged = await h.client.accounts.merge({ merge_by: ['str:o:name'], accounts: [{ fields: { 'str:o:name': 'acme', 'str:o:industry': 'Anvils' } }] });
    expect(merged.accounts).toEqual([{ account_id: created.accounts![0]!.account_id, status: 'merged' }]);
    const org = await h.client.organizations.get({ fields: ['str:o:name', 'int:o:employees', 'str:o:industry', 'tags'] });
    expect(org.organizations).toEqual([
      { id: created.accounts![0]!.account_id, fields: { 'str:o:name': 'acme', 'int:o:employees': 12000, 'str:o:industry': 'Anvils', tags: ['customer'] } },
    ]);
    expect((await h.client.tags.get({ q: 'customer' }))[0]).toMatchObject({ name: 'customer', type: 'organization' });
    const missing = await h.call('/v1/accounts/merge', { accounts: [{ fields: { 'str:o:name': 'X' } }] });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toContain('merge_by');
  });

  it('takes 100 accounts per request and refuses 101; async answers a queued confirmation', async () => {
    const accounts = (n: number) => Array.from({ length: n }, (_, i) => ({ fields: { 'str:o:name': `Co ${i}` } }));
    expect((await h.client.accounts.merge({ merge_by: ['str:o:name'], accounts: accounts(100) })).accounts).toHaveLength(100);
    const over = await h.call('/v1/accounts/merge', { merge_by: ['str:o:name'], accounts: accounts(101) });
    expect(over.status).toBe(400);
    expect(over.body.error).toContain('at most 100');
    expect(await h.client.accounts.merge({ async: true, merge_by: ['str:o:name'], accounts: [{ fields: { 'str:o:name': 'Later' } }] })).toEqual({
      status: 'queued',
      queued: 1,
    });
    expect(h.running.emulator.state.accounts.size).toBe(101);
  });

  it('accepts all three spellings of the account ID', async () => {
    const id = await account('Spell');
    for (const key of ['str:o:account_id', 'str:o:accounts_id', 'str:o:organization_id', 'accounts_id']) {
      const result = await h.client.accounts.merge({ merge_by: [key], accounts: [{ fields: { [key]: id, 'str:o:website': `https://${key}.example` } }] });
      expect(result.accounts).toEqual([{ account_id: id, status: 'merged' }]);
    }
    const error = await rejection(h.client.accounts.merge({ merge_by: ['accounts_id'], accounts: [{ fields: { accounts_id: '10ffffffffffffffffffffff' } }] }));
    expect(error.status).toBe(400);
    expect(error.details[0].error).toContain('No account has ID');
  });

  it('strategy 1 fills only empty fields, 3 ignores existing; find_strategy 1 does not fall back', async () => {
    const id = await account('Strat', { 'str:o:industry': 'Old' });
    await h.client.accounts.merge({
      merge_by: ['str:o:name'],
      merge_strategy: 1,
      accounts: [{ fields: { 'str:o:name': 'Strat', 'str:o:industry': 'New', 'str:o:postal': '75001' } }],
    });
    await h.client.accounts.merge({ merge_by: ['str:o:name'], merge_strategy: 3, accounts: [{ fields: { 'str:o:name': 'Strat', 'str:o:postal': '99999' } }] });
    expect((await h.client.organizations.get({ fields: ['str:o:industry', 'str:o:postal'] })).organizations![0]!.fields).toEqual({
      'str:o:industry': 'Old',
      'str:o:postal': '75001',
    });
    const next = await h.client.accounts.merge({
      merge_by: ['str:o:website', 'str:o:name'],
      find_strategy: 1,
      accounts: [{ fields: { 'str:o:website': 'https://nomatch.example', 'str:o:name': 'Strat' } }],
    });
    expect(next.accounts![0]!.status).toBe('created');
    const any = await h.client.accounts.merge({
      merge_by: ['str:o:website', 'str:o:name'],
      find_strategy: 0,
      accounts: [{ fields: { 'str:o:website': 'https://other.example', 'str:o:name': 'Strat' } }],
    });
    expect(any.accounts![0]).toEqual({ account_id: id, status: 'merged' });
  });
});

describe('accounts/contacts/add and remove', () => {
  it('links by IDs or filter; re-linking moves the person; remove unlinks', async () => {
    const [a, b] = await people(2);
    const first = await account('First');
    const second = await account('Second');
    expect(await h.client.accounts.addContacts({ accounts_id: first, inclusion_ids: [a!, b!] })).toEqual({});
    await h.client.accounts.addContacts({ accounts_id: second, filter: { '$str::is': { field_id: 'str::email', value: email(1) } } });
    const state = h.running.emulator.state;
    expect(state.people.get(a!)!.accountId).toBe(first);
    expect(state.people.get(b!)!.accountId).toBe(second);
    expect([...state.accounts.get(first)!.members]).toEqual([a]);
    const meta = (await h.client.organizations.get({})).meta;
    expect(meta).toEqual({ total_contacts: 2, total_organizations: 2, total_matches: 2, total_subscribers: 0 });
    await h.client.accounts.removeContacts({ accounts_id: first, filter: { '$str::contains': { field_id: 'str::email', value: 'person' } } });
    expect(state.people.get(a!)!.accountId).toBeNull();
    expect(state.people.get(b!)!.accountId).toBe(second);
  });

  it('links 3,000 people to one account and refuses the 3,001st', async () => {
    const ids = await people(3001);
    const big = await account('Big');
    await h.client.accounts.addContacts({ accounts_id: big, inclusion_ids: ids.slice(0, 3000) });
    expect(h.running.emulator.state.accounts.get(big)!.members.size).toBe(3000);
    const error = await rejection(h.client.accounts.addContacts({ accounts_id: big, inclusion_ids: [ids[3000]!] }));
    expect(error.status).toBe(400);
    expect(error.message).toContain('at most 3000');
    expect(h.running.emulator.state.people.get(ids[3000]!)!.accountId).toBeNull();
  }, 60_000);

  it('refuses unknown people and accounts with a clear message', async () => {
    const [a] = await people(1);
    const acc = await account('Known');
    expect((await rejection(h.client.accounts.addContacts({ accounts_id: '10aaaaaaaaaaaaaaaaaaaaaa', inclusion_ids: [a!] }))).message).toContain(
      'No account has ID',
    );
    expect((await rejection(h.client.accounts.addContacts({ accounts_id: acc, inclusion_ids: ['00bbbbbbbbbbbbbbbbbbbbbb'] }))).message).toContain(
      'No active person',
    );
  });
});

describe('organizations/get', () => {
  it('filters, q on the name, inclusion/exclusion, organization_id, sort and paging', async () => {
    const ids = [];
    for (const [name, industry] of [
      ['Alpha', 'Tech'],
      ['Beta', ''],
      ['Gamma', 'Tech'],
    ] as const)
      ids.push(await account(name, industry ? { 'str:o:industry': industry } : {}));
    const names = async (body: object) =>
      ((await h.client.organizations.get({ ...body, fields: ['str:o:name'] })).organizations ?? []).map((o) => o.fields!['str:o:name']);
    expect(await names({ filter: { '$str::is': { field_id: 'str:o:industry', value: 'tech' } }, sort_by_field_id: 'str:o:name', sort_order: 'asc' })).toEqual([
      'Alpha',
      'Gamma',
    ]);
    expect(await names({ filter: { $has_no_value: { field_id: 'str:o:industry' } } })).toEqual(['Beta']);
    expect(await names({ q: 'amm' })).toEqual(['Gamma']);
    expect(await names({ inclusion_ids: [ids[0], ids[1]], exclusion_ids: [ids[1]] })).toEqual(['Alpha']);
    expect(await names({ organization_id: ids[2] })).toEqual(['Gamma']);
    expect(await names({ sort_by_field_id: 'str:o:name' })).toEqual(['Gamma', 'Beta', 'Alpha']);
    const page = await h.client.organizations.get({ limit: 2 });
    expect(page).toMatchObject({ offset: 0, next_offset: 2, has_more: true });
    const rest = await h.client.organizations.get({ limit: 2, offset: page.next_offset, cursor_id: page.cursor_id });
    expect(rest.organizations).toHaveLength(1);
    expect(rest.has_more).toBe(false);
    expect((await h.call('/v1/organizations/get', { filter: { '$str::contains': { field_id: 'str:o:name', value: 'a' } } })).status).toBe(400);
  });
});

describe('archive, restore, delete', () => {
  it('people: counters as recorded; restore or delete of an active person is refused', async () => {
    const ids = await people(3);
    const refused = await rejection(h.client.person.delete({ inclusion_ids: [ids[0]!] }));
    expect(refused.status).toBe(400);
    expect(refused.message).toContain('archive it first');
    expect((await rejection(h.client.person.restore({ inclusion_ids: [ids[0]!] }))).status).toBe(400);
    expect(await h.client.person.archive({ inclusion_ids: ids })).toEqual({ scheduled_contacts: 0, archived_contacts: 3 });
    expect(await h.client.person.restore({ all_rows_selected: true, exclusion_ids: [ids[2]!] })).toEqual({ scheduled_contacts: 0, restored_contacts: 2 });
    expect(await h.client.person.delete({ inclusion_ids: [ids[2]!] })).toEqual({ scheduled_contacts: 0, deleted_contacts: 1 });
    expect(h.running.emulator.state.people.has(ids[2]!)).toBe(false);
    // a deleted person's email is free again
    expect((await h.client.person.merge({ people: [{ fields: { 'str::email': email(2) } }] })).people![0]!.status).toBe('created');
  });

  it('people: 100 IDs per call pass, 101 are refused', async () => {
    const ids = await people(101);
    expect((await h.client.person.archive({ inclusion_ids: ids.slice(0, 100) }))['archived_contacts']).toBe(100);
    const over = await h.call('/v1/person/archive', { inclusion_ids: ids }, { method: 'PUT' });
    expect(over.status).toBe(400);
    expect(over.body.error).toContain('at most 100');
    expect((await h.call('/v1/person/archive', {}, { method: 'PUT' })).status).toBe(400);
  });

  it('accounts and organizations: one kind of record, recorded counter names, archiving unlinks people', async () => {
    const [p] = await people(1);
    const a = await account('A');
    const b = await account('B');
    await h.client.accounts.addContacts({ accounts_id: a, inclusion_ids: [p!] });
    expect(await h.client.accounts.archive({ inclusion_ids: [a] })).toEqual({ scheduled_organizations: 0, archived_organizations: 1 });
    expect(h.running.emulator.state.people.get(p!)!.accountId).toBeNull();
    expect((await h.client.organizations.get({ type: 'archived_organization' })).organizations!.map((o) => o.id)).toEqual([a]);
    expect(await h.client.organizations.restore({ inclusion_ids: [a] })).toEqual({ scheduled_organizations: 0, restored_organizations: 1 });
    expect((await rejection(h.client.accounts.delete({ inclusion_ids: [b] }))).message).toContain('only archived records');
    await h.client.organizations.archive({ all_rows_selected: true });
    expect(await h.client.accounts.delete({ inclusion_ids: [b] })).toEqual({ scheduled_accounts: 0, deleted_accounts: 1 });
    expect(await h.client.organizations.delete({ all_rows_selected: true })).toEqual({ scheduled_accounts: 0, deleted_accounts: 1 });
    expect(h.running.emulator.state.accounts.size).toBe(0);
  });
});
