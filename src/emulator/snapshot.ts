/**
 * The state as JSON: what `--data` files hold and `GET /_emulator/state` answers. Loading is
 * lenient so a hand-written seed works: IDs are generated when missing, tags may be names,
 * audiences may list their members by email or person ID.
 * @module
 */
import type { ActivityDefinition, Tag } from '../api/index.js';
import { fail } from './errors.js';
import type { Store } from './store.js';
import type { ActivityEvent, Audience, CustomField, Membership, PersonLocation } from './records.js';
import { isRecord } from '../api/objects.js';

export interface PersonSnapshot {
  id?: string;
  fields?: Record<string, unknown>;
  /** tag names (IDs are accepted too) */
  tags?: Array<string | number>;
  archived?: boolean;
  account_id?: string | null;
  location?: PersonLocation | null;
  audiences?: Record<string, Membership>;
  events?: ActivityEvent[];
  created_at?: string;
  updated_at?: string;
}

export interface AccountSnapshot {
  id?: string;
  fields?: Record<string, unknown>;
  tags?: Array<string | number>;
  archived?: boolean;
  created_at?: string;
  updated_at?: string;
}

export interface AudienceSnapshot extends Audience {
  /** members by email or person ID, with their permissions in this audience */
  members?: Array<{ email?: string; person_id?: string; subscribed?: boolean; sms_opted_in?: boolean }>;
}

export interface EmulatorSnapshot {
  version: 1;
  people: PersonSnapshot[];
  accounts: AccountSnapshot[];
  tags: Tag[];
  custom_fields: { person: CustomField[]; account: CustomField[] };
  activities: ActivityDefinition[];
  audiences: AudienceSnapshot[];
  /** email addresses on the suppression list */
  suppression_list: string[];
  recent_events: ActivityEvent[];
  address_lookups: number;
}

/** The whole state as plain JSON. */
export function toSnapshot(store: Store): EmulatorSnapshot {
  return {
    version: 1,
    people: [...store.people.values()].map((p) => ({
      id: p.id,
      fields: p.fields,
      tags: store.tagNames(p.tags),
      archived: p.archived,
      account_id: p.accountId,
      location: p.location,
      audiences: p.audiences,
      events: p.events,
      created_at: p.created_at,
      updated_at: p.updated_at,
    })),
    accounts: [...store.accounts.values()].map((a) => ({
      id: a.id,
      fields: a.fields,
      tags: store.tagNames(a.tags),
      archived: a.archived,
      created_at: a.created_at,
      updated_at: a.updated_at,
    })),
    tags: [...store.tags.values()],
    custom_fields: { person: [...store.personFields.values()], account: [...store.accountFields.values()] },
    activities: [...store.activities.values()],
    audiences: [...store.audiences.values()],
    suppression_list: [...store.suppressed],
    recent_events: store.recentEvents,
    address_lookups: store.addressLookups,
  };
}

const list = <T>(value: unknown, name: string): T[] => {
  if (value === undefined) return [];
  if (!Array.isArray(value)) fail(`seed: ${name} must be an array`);
  return value as T[];
};

/** Replaces the store's content with `snapshot`; throws naming the first bad part. */
export function loadSnapshot(store: Store, snapshot: Partial<EmulatorSnapshot>): void {
  if (!isRecord(snapshot)) fail('seed must be a JSON object');
  store.clear();
  for (const tag of list<Tag>(snapshot.tags, 'tags')) store.tags.set(tag.id, tag);
  for (const field of list<CustomField>(snapshot.custom_fields?.person, 'custom_fields.person')) store.personFields.set(field.id, field);
  for (const field of list<CustomField>(snapshot.custom_fields?.account, 'custom_fields.account')) store.accountFields.set(field.id, field);
  for (const definition of list<ActivityDefinition>(snapshot.activities, 'activities')) store.activities.set(definition.activity_field_id, definition);
  for (const email of list<string>(snapshot.suppression_list, 'suppression_list')) store.suppressed.add(String(email).trim().toLowerCase());
  const tagIds = (tags: Array<string | number> | undefined, type: '' | 'organization') =>
    (tags ?? []).map((tag) => (typeof tag === 'number' ? tag : store.tagFor(tag, type, true)!.id));
  for (const seed of list<AccountSnapshot>(snapshot.accounts, 'accounts')) {
    const account = store.createAccount(seed.id);
    account.fields = { ...seed.fields };
    account.tags = tagIds(seed.tags, 'organization');
    account.archived = seed.archived === true;
    if (seed.created_at) account.created_at = seed.created_at;
    if (seed.updated_at) account.updated_at = seed.updated_at;
  }
  for (const seed of list<PersonSnapshot>(snapshot.people, 'people')) {
    if (!isRecord(seed as unknown)) fail('seed: each person must be an object');
    const person = store.createPerson(seed.id);
    for (const [id, value] of Object.entries(seed.fields ?? {})) store.setPersonField(person, id, value);
    if (person.fields['bol::p'] === undefined) person.fields['bol::p'] = true;
    person.tags = tagIds(seed.tags, '');
    person.archived = seed.archived === true;
    person.location = seed.location ?? null;
    person.audiences = { ...seed.audiences };
    person.events = seed.events ?? [];
    if (seed.created_at) person.created_at = seed.created_at;
    if (seed.updated_at) person.updated_at = seed.updated_at;
    const account = seed.account_id ? store.accounts.get(seed.account_id) : undefined;
    if (account) store.link(person, account);
  }
  const now = store.nowIso();
  for (const seed of list<AudienceSnapshot>(snapshot.audiences, 'audiences')) {
    if (!isRecord(seed) || typeof seed.id !== 'string') fail('seed: each audience needs an id');
    store.audiences.set(seed.id, { id: seed.id, name: seed.name ?? seed.id });
    for (const member of seed.members ?? []) {
      const person = member.person_id ? store.people.get(member.person_id) : member.email ? store.peopleBy('str::email', member.email)[0] : undefined;
      if (!person) fail(`seed: audience ${seed.id} lists a member who is not among the people (${member.email ?? member.person_id})`);
      person.audiences[seed.id] = { member_from: now, subscribed: member.subscribed ?? true, subscribed_from: now, sms_opted_in: member.sms_opted_in ?? false };
    }
  }
  store.recentEvents = list<ActivityEvent>(snapshot.recent_events, 'recent_events');
  store.addressLookups = typeof snapshot.address_lookups === 'number' ? snapshot.address_lookups : 0;
  store.touch();
}
