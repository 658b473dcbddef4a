/**
 * Accounts (organizations): `accounts/merge`, linking people (`accounts/contacts/add|remove`)
 * and `organizations/get`. The account ID is accepted under all its spellings
 * (`str:o:account_id`, `str:o:accounts_id`, `str:o:organization_id`, `accounts_id`).
 * @module
 */
import {
  ACCOUNT_ID_FIELD,
  CONTACTS_LINK_FILTER_OPERATORS,
  LIMITS,
  ORGANIZATION_FILTER_OPERATORS,
  canonicalFieldId,
  type AccountMergeResult,
  type ResponseMap,
} from '../api/index.js';
import { fail } from './errors.js';
import { checkRecordFields, isMultiSelect } from './fields.js';
import { compileFilter, type FilterEnv } from './filter/index.js';
import { pageOf } from './paging.js';
import { personEnv } from './people/view.js';
import { sortBy } from './sort.js';
import type { Store } from './store.js';
import type { Account, Person } from './records.js';
import { applyFields, type MergeStrategy } from './write.js';

const present = (value: unknown) => value !== undefined && value !== null && value !== '';

function accountValue(store: Store, account: Account, fieldId: string): unknown {
  const id = canonicalFieldId(fieldId);
  if (id === ACCOUNT_ID_FIELD) return account.id;
  if (id === 'tags') return store.tagNames(account.tags);
  return account.fields[id];
}

function findAccount(store: Store, key: string, value: unknown): Account | undefined {
  if (key === ACCOUNT_ID_FIELD) return typeof value === 'string' ? store.accounts.get(value) : undefined;
  const wanted = typeof value === 'string' ? value.toLowerCase() : JSON.stringify(value);
  for (const account of store.accounts.values()) {
    const have = account.fields[key];
    if ((typeof have === 'string' ? have.toLowerCase() : JSON.stringify(have)) === wanted) return account;
  }
  return undefined;
}

interface AccountInput {
  fields: unknown;
  tags?: string[];
  unset_tags?: string[];
}

/**
 * `accounts/merge`: `merge_by` is mandatory (no defaults for accounts); find strategy 0 tries
 * each key, 1 uses the first supplied key only. An unknown account ID is refused per entry
 * (an ID cannot be chosen by the caller). `async` answers `{status: 'queued', queued: N}`, as for people.
 */
export function accountsMerge(store: Store, body: Record<string, unknown>): ResponseMap['accounts/merge'] {
  const mergeBy = (body['merge_by'] as string[]).map(canonicalFieldId);
  const strategy = (body['merge_strategy'] as MergeStrategy | undefined) ?? 2;
  const findStrategy = (body['find_strategy'] as 0 | 1 | undefined) ?? 0;
  const results: AccountMergeResult[] = (body['accounts'] as AccountInput[]).map((input) => {
    const checked = checkRecordFields(store, 'account', input.fields);
    if (!checked.ok) return { status: 'invalid', error: checked.error };
    const fields = checked.value;
    const keys = mergeBy.filter((key) => present(fields[key]));
    if (keys.length === 0) return { status: 'invalid', error: `fields must include a merge_by field (${mergeBy.join(' or ')})` };
    let existing: Account | undefined;
    for (const key of findStrategy === 1 ? keys.slice(0, 1) : keys) {
      existing = findAccount(store, key, fields[key]);
      if (existing) break;
    }
    const givenId = fields[ACCOUNT_ID_FIELD];
    delete fields[ACCOUNT_ID_FIELD];
    if (!existing && keys[0] === ACCOUNT_ID_FIELD) return { status: 'invalid', error: `No account has ID ${JSON.stringify(givenId)}` };
    if (existing?.archived) return { status: 'invalid', error: `Account ${existing.id} is archived; restore it first` };
    if (!existing) {
      const account = store.createAccount();
      for (const [id, value] of Object.entries(fields)) if (value !== null) account.fields[id] = value;
      account.fields['str:o:source'] ??= 'api';
      store.applyTags(account, 'organization', input.tags, input.unset_tags);
      return { account_id: account.id, status: 'created' };
    }
    if (strategy !== 3) {
      const target = existing;
      applyFields(
        target.fields,
        fields,
        strategy,
        undefined,
        (id, value) => {
          if (value === null || value === undefined) delete target.fields[id];
          else target.fields[id] = value;
        },
        (id) => isMultiSelect(store, 'account', id),
      );
      store.applyTags(target, 'organization', input.tags, input.unset_tags);
      target.updated_at = store.nowIso();
    }
    return { account_id: existing.id, status: 'merged' };
  });
  if (results.some((r) => r.status !== 'invalid')) store.touch();
  if (body['async'] === true) return { status: 'queued', queued: results.length };
  if (results.every((r) => r.status === 'invalid')) {
    fail(
      results.length === 1 ? `The account was not merged: ${results[0]!.error}` : `None of the ${results.length} accounts were merged`,
      400,
      results.map((r) => ({ status: r.status, error: r.error ?? '' })),
    );
  }
  return { accounts: results };
}

/** The people a link call names: `inclusion_ids` (all must exist) or everyone matching `filter`. */
function linkTargets(store: Store, body: Record<string, unknown>): Person[] {
  if (body['filter'] !== undefined) {
    const test = compileFilter(body['filter'], personEnv(store), CONTACTS_LINK_FILTER_OPERATORS);
    return [...store.people.values()].filter((p) => !p.archived && test(p));
  }
  const ids = body['inclusion_ids'] as string[];
  const missing = ids.filter((id) => !store.people.get(id) || store.people.get(id)!.archived);
  if (missing.length > 0)
    fail(
      `No active person has ID ${missing
        .slice(0, 5)
        .map((id) => JSON.stringify(id))
        .join(', ')}${missing.length > 5 ? ` (and ${missing.length - 5} more)` : ''}`,
    );
  return [...new Set(ids)].map((id) => store.people.get(id)!);
}

function linkAccount(store: Store, body: Record<string, unknown>): Account {
  const raw = body['accounts_id'] ?? body['account_id'];
  const id = Array.isArray(raw) ? raw[0] : raw;
  const account = typeof id === 'string' ? store.accounts.get(id) : undefined;
  if (!account) fail(`No account has ID ${JSON.stringify(id)}`);
  if (account.archived) fail(`Account ${account.id} is archived; restore it before linking people`);
  return account;
}

/** `accounts/contacts/add`: at most 3,000 people per account; linking moves a person from an earlier account. */
export function contactsAdd(store: Store, body: Record<string, unknown>): Record<string, never> {
  const account = linkAccount(store, body);
  const people = linkTargets(store, body);
  const after = new Set([...account.members, ...people.map((p) => p.id)]).size;
  if (after > LIMITS.peoplePerAccount)
    fail(`Account ${account.id} would have ${after} people; at most ${LIMITS.peoplePerAccount} can be linked to one account`);
  for (const person of people) store.link(person, account);
  if (people.length > 0) store.touch();
  return {};
}

/** `accounts/contacts/remove`: unlinks the named people from this account (others are left alone). */
export function contactsRemove(store: Store, body: Record<string, unknown>): Record<string, never> {
  const account = linkAccount(store, body);
  let changed = false;
  for (const person of linkTargets(store, body)) {
    if (person.accountId !== account.id) continue;
    store.unlink(person);
    changed = true;
  }
  if (changed) store.touch();
  return {};
}

function accountEnv(store: Store): FilterEnv<Account> {
  return { id: (a) => a.id, value: (a, id) => accountValue(store, a, id), now: store.now };
}

function projectAccount(store: Store, account: Account, fields: readonly string[] | undefined): Record<string, unknown> {
  if (fields === undefined) {
    const out: Record<string, unknown> = { ...account.fields };
    if (account.tags.length > 0) out['tags'] = store.tagNames(account.tags);
    return out;
  }
  return Object.fromEntries(fields.map((id) => [id, accountValue(store, account, id) ?? null]));
}

/** `organizations/get`: its own filters, `inclusion_ids`/`exclusion_ids`, `type`, `q` on the name. */
export function organizationsGet(store: Store, body: Record<string, unknown>): ResponseMap['organizations/get'] {
  const archived = body['type'] === 'archived_organization';
  let list = [...store.accounts.values()].filter((a) => a.archived === archived);
  const only = body['organization_id'] as string | undefined;
  if (only !== undefined) list = list.filter((a) => a.id === only);
  const include = body['inclusion_ids'] as string[] | undefined;
  if (include) list = list.filter((a) => include.includes(a.id));
  const exclude = new Set((body['exclusion_ids'] as string[] | undefined) ?? []);
  if (exclude.size > 0) list = list.filter((a) => !exclude.has(a.id));
  const q = typeof body['q'] === 'string' ? body['q'].trim().toLowerCase() : '';
  if (q !== '')
    list = list.filter((a) =>
      String(a.fields['str:o:name'] ?? '')
        .toLowerCase()
        .includes(q),
    );
  if (body['filter'] !== undefined) list = list.filter(compileFilter(body['filter'], accountEnv(store), ORGANIZATION_FILTER_OPERATORS));
  const sortField = body['sort_by_field_id'] as string | undefined;
  if (sortField !== undefined) list = sortBy(list, (a) => accountValue(store, a, sortField), (body['sort_order'] as 'asc' | 'desc' | undefined) ?? 'desc');
  const page = pageOf(list, body);
  let linked = 0;
  let active = 0;
  for (const account of store.accounts.values()) {
    if (account.archived) continue;
    active++;
    linked += account.members.size;
  }
  const fields = body['fields'] as string[] | undefined;
  return {
    organizations: page.items === null ? null : page.items.map((a) => ({ id: a.id, fields: projectAccount(store, a, fields) })),
    meta: { total_contacts: linked, total_organizations: active, total_matches: list.length, total_subscribers: 0 },
    offset: page.offset,
    next_offset: page.next_offset,
    cursor_id: page.cursor_id,
    has_more: page.has_more,
  };
}
