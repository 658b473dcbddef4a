/**
 * `person/get` (filters, search, audience, sorting, paging, totals) and `person/get-by-ids`.
 * The base list and each sorted order are cached per store version, so paging through
 * 100k people re-sorts only after a write.
 * @module
 */
import { PERSON_FILTER_OPERATORS, type ResponseMap } from '../../api/index.js';
import { compileFilter } from '../filter/index.js';
import { pageOf } from '../paging.js';
import { sortBy } from '../sort.js';
import type { Store } from '../store.js';
import type { Membership, Person } from '../records.js';
import { personEnv, personValue, projectPerson } from './view.js';

interface Cache {
  version: number;
  lists: Map<string, Person[]>;
  meta?: { total_contacts: number; total_subscribers: number } | undefined;
}
const caches = new WeakMap<Store, Cache>();

function cacheOf(store: Store): Cache {
  let cache = caches.get(store);
  if (!cache || cache.version !== store.version) {
    cache = { version: store.version, lists: new Map() };
    caches.set(store, cache);
  }
  return cache;
}

/** Active (or archived) people in creation order, or sorted by a field; cached until the next write. */
function ordered(store: Store, archived: boolean, sortField: string | undefined, order: 'asc' | 'desc'): Person[] {
  const cache = cacheOf(store);
  const key = `${archived}|${sortField ?? ''}|${order}`;
  let list = cache.lists.get(key);
  if (list) return list;
  if (sortField === undefined) list = [...store.people.values()].filter((p) => p.archived === archived);
  else list = sortBy(ordered(store, archived, undefined, 'asc'), (p) => personValue(store, p, sortField), order);
  cache.lists.set(key, list);
  return list;
}

function totals(store: Store) {
  const cache = cacheOf(store);
  if (!cache.meta) {
    let contacts = 0;
    let subscribers = 0;
    for (const person of store.people.values()) {
      if (person.archived) continue;
      contacts++;
      if (personValue(store, person, 'bol::p') === true) subscribers++;
    }
    cache.meta = { total_contacts: contacts, total_subscribers: subscribers };
  }
  return cache.meta;
}

/** The spec's `audience_filter` values, on a member's audience permissions and global permissions. */
const AUDIENCE_TESTS: Record<string, (m: Membership, emailOk: boolean, smsOk: boolean) => boolean> = {
  subscribers: (m, emailOk) => emailOk && m.subscribed,
  unsubscribed: (m, emailOk) => !emailOk || !m.subscribed,
  'unsubscribed-from-audience': (m) => !m.subscribed,
  'email-subscribers': (m) => m.subscribed,
  'sms-subscribers': (m, _e, smsOk) => smsOk && m.sms_opted_in,
};

/** `q`: every word must appear in the name, email, external ID or phone (ignoring case). */
function searchTest(q: string): (p: Person) => boolean {
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  return (person) => {
    const phone = person.fields['phn::phone'] as { c?: string; n?: string } | undefined;
    const haystack = [
      person.fields['str::first'],
      person.fields['str::last'],
      person.fields['str::email'],
      person.fields['str::ei'],
      phone ? `${phone.c}${phone.n}` : '',
    ]
      .filter((v) => typeof v === 'string')
      .join(' ')
      .toLowerCase();
    return words.every((word) => haystack.includes(word));
  };
}

export function personGet(store: Store, body: Record<string, unknown>): ResponseMap['person/get'] {
  const archived = body['type'] === 'archived';
  const sortField = body['sort_by_field_id'] as string | undefined;
  let list = ordered(store, archived, sortField, (body['sort_order'] as 'asc' | 'desc' | undefined) ?? 'desc');
  const tests: Array<(p: Person) => boolean> = [];
  if (body['filter'] !== undefined) tests.push(compileFilter(body['filter'], personEnv(store), PERSON_FILTER_OPERATORS));
  if (typeof body['q'] === 'string' && body['q'].trim() !== '') tests.push(searchTest(body['q']));
  const audienceId = body['audience_id'] as string | undefined;
  if (audienceId !== undefined) {
    const test = AUDIENCE_TESTS[(body['audience_filter'] as string | undefined) ?? ''];
    tests.push((p) => {
      const m = p.audiences[audienceId];
      return m !== undefined && (!test || test(m, personValue(store, p, 'bol::p') === true, personValue(store, p, 'bol::sp') === true));
    });
  }
  if (tests.length > 0) list = list.filter((p) => tests.every((test) => test(p)));
  const page = pageOf(list, body);
  const fields = body['fields'] as string[] | undefined;
  const meta = totals(store);
  return {
    contacts: page.items === null ? null : page.items.map((p) => ({ id: p.id, fields: projectPerson(store, p, fields) })),
    meta: {
      total_contacts: meta.total_contacts,
      total_organizations: [...store.accounts.values()].filter((a) => !a.archived).length,
      total_matches: list.length,
      total_subscribers: meta.total_subscribers,
    },
    offset: page.offset,
    next_offset: page.next_offset,
    cursor_id: page.cursor_id,
    has_more: page.has_more,
  };
}

/** `person/get-by-ids`: an object keyed by ID (recorded); unknown IDs are left out. */
export function personGetByIds(store: Store, body: Record<string, unknown>): ResponseMap['person/get-by-ids'] {
  const fields = body['fields'] as string[] | undefined;
  const contacts: ResponseMap['person/get-by-ids']['contacts'] = {};
  for (const id of body['contact_ids'] as string[]) {
    const person = store.people.get(id);
    if (person) contacts[id] = { id, fields: projectPerson(store, person, fields) };
  }
  return { contacts };
}
