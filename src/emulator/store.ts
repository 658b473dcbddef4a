/**
 * The emulator's state: people, accounts, tags, custom fields, activity definitions and
 * audiences, with the indexes that keep merges O(1) and retrieval fast at 100k people.
 * Every write goes through here so indexes, `version` and `onChange` stay current.
 * @module
 */
import { type ActivityDefinition, identifierKey, type Tag } from '../api/index.js';
import { newId } from './ids.js';
import type { Account, ActivityEvent, Audience, CustomField, Person } from './records.js';

/** Fields indexed from the start; any other `merge_by` field gets an index on first use. */
const ALWAYS_INDEXED = ['str::email', 'str::ei'];

/** Index key of a value: emails compare case-insensitively, like the platform's unique identifiers. */
export function indexKey(fieldId: string, value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string') return identifierKey(fieldId, value);
  return JSON.stringify(value);
}

export class Store {
  readonly people = new Map<string, Person>();
  readonly accounts = new Map<string, Account>();
  readonly tags = new Map<number, Tag>();
  readonly personFields = new Map<string, CustomField>();
  readonly accountFields = new Map<string, CustomField>();
  readonly activities = new Map<string, ActivityDefinition>();
  readonly audiences = new Map<string, Audience>();
  /** lower-cased suppressed email addresses */
  readonly suppressed = new Set<string>();
  /** the latest activity events of everyone, newest last (for the dashboard) */
  recentEvents: ActivityEvent[] = [];
  addressLookups = 0;
  /** bumps on every write: caches of sorted orders and totals key on it */
  version = 0;
  private seq = 0;
  private readonly indexes = new Map<string, Map<string, Set<string>>>();

  constructor(
    readonly now: () => number,
    private readonly changed: () => void = () => {},
  ) {
    for (const field of ALWAYS_INDEXED) this.indexes.set(field, new Map());
  }

  nowIso(): string {
    return new Date(this.now()).toISOString();
  }

  /** Marks a write: invalidates caches, tells the persistence hook. */
  touch(): void {
    this.version++;
    this.changed();
  }

  nextSeq(): number {
    return ++this.seq;
  }

  // --- people -------------------------------------------------------------------------

  createPerson(id?: string): Person {
    const now = this.nowIso();
    const person: Person = {
      id: id ?? newId('00', this.now()),
      seq: this.nextSeq(),
      fields: {},
      tags: [],
      archived: false,
      accountId: null,
      location: null,
      audiences: {},
      events: [],
      created_at: now,
      updated_at: now,
    };
    this.people.set(person.id, person);
    return person;
  }

  /** Sets (or with `null`/`undefined` clears) one field, keeping every index current. */
  setPersonField(person: Person, fieldId: string, value: unknown): void {
    const index = this.indexes.get(fieldId);
    if (index) {
      const oldKey = indexKey(fieldId, person.fields[fieldId]);
      if (oldKey !== undefined) {
        const ids = index.get(oldKey);
        ids?.delete(person.id);
        if (ids?.size === 0) index.delete(oldKey);
      }
      const newKey = indexKey(fieldId, value);
      if (newKey !== undefined) {
        let ids = index.get(newKey);
        if (!ids) {
          ids = new Set();
          index.set(newKey, ids);
        }
        ids.add(person.id);
      }
    }
    if (value === undefined || value === null) delete person.fields[fieldId];
    else person.fields[fieldId] = value;
  }

  /** People whose `fieldId` holds `value`, oldest first (built lazily for fields other than email and ei). */
  peopleBy(fieldId: string, value: unknown): Person[] {
    const key = indexKey(fieldId, value);
    if (key === undefined) return [];
    if (fieldId === 'str::person_id') {
      const person = typeof value === 'string' ? this.people.get(value) : undefined;
      return person ? [person] : [];
    }
    let index = this.indexes.get(fieldId);
    if (!index) {
      index = new Map();
      for (const person of this.people.values()) {
        const k = indexKey(fieldId, person.fields[fieldId]);
        if (k === undefined) continue;
        let ids = index.get(k);
        if (!ids) {
          ids = new Set();
          index.set(k, ids);
        }
        ids.add(person.id);
      }
      this.indexes.set(fieldId, index);
    }
    const ids = index.get(key);
    if (!ids) return [];
    const out: Person[] = [];
    for (const id of ids) {
      const person = this.people.get(id);
      if (person) out.push(person);
    }
    return out.sort((a, b) => a.seq - b.seq);
  }

  /** Removes a person for good: indexes, account link. */
  deletePerson(person: Person): void {
    for (const fieldId of this.indexes.keys()) this.setPersonField(person, fieldId, undefined);
    this.unlink(person);
    this.people.delete(person.id);
  }

  // --- accounts -----------------------------------------------------------------------

  createAccount(id?: string): Account {
    const now = this.nowIso();
    const account: Account = {
      id: id ?? newId('10', this.now()),
      seq: this.nextSeq(),
      fields: {},
      tags: [],
      archived: false,
      members: new Set(),
      created_at: now,
      updated_at: now,
    };
    this.accounts.set(account.id, account);
    return account;
  }

  /** Links `person` to `account`, moving it from any earlier account (one account per person). */
  link(person: Person, account: Account): void {
    this.unlink(person);
    person.accountId = account.id;
    account.members.add(person.id);
  }

  unlink(person: Person): void {
    if (person.accountId === null) return;
    this.accounts.get(person.accountId)?.members.delete(person.id);
    person.accountId = null;
  }

  // --- tags ---------------------------------------------------------------------------

  /** The tag named `name` of `type` ('' person, 'organization' account), created when missing. */
  tagFor(name: string, type: '' | 'organization', create: boolean): Tag | undefined {
    for (const tag of this.tags.values()) if (tag.type === type && tag.name.toLowerCase() === name.toLowerCase()) return tag;
    if (!create) return undefined;
    const now = this.nowIso();
    const tag: Tag = {
      id: this.tags.size === 0 ? 1 : Math.max(...this.tags.keys()) + 1,
      instance_id: '',
      name,
      source: 'api',
      created_by_id: 'api',
      created_by_name: 'Public API',
      created_by_email: '',
      created_at: now,
      last_used: now,
      count: 0,
      sms_opted_in: 0,
      subscribers: 0,
      type,
    };
    this.tags.set(tag.id, tag);
    return tag;
  }

  /** Applies `tags` then removes `unset_tags` on a record's tag ID list. */
  applyTags(record: { tags: number[] }, type: '' | 'organization', add: readonly string[] = [], remove: readonly string[] = []): void {
    const now = this.nowIso();
    for (const name of add) {
      const tag = this.tagFor(name, type, true)!;
      tag.last_used = now;
      if (!record.tags.includes(tag.id)) record.tags.push(tag.id);
    }
    for (const name of remove) {
      const tag = this.tagFor(name, type, false);
      if (tag) record.tags = record.tags.filter((id) => id !== tag.id);
    }
  }

  tagNames(ids: readonly number[]): string[] {
    return ids.map((id) => this.tags.get(id)?.name).filter((name): name is string => name !== undefined);
  }

  /** Empties everything (the `reset` of tests). */
  clear(): void {
    this.people.clear();
    this.accounts.clear();
    this.tags.clear();
    this.personFields.clear();
    this.accountFields.clear();
    this.activities.clear();
    this.audiences.clear();
    this.suppressed.clear();
    this.recentEvents = [];
    this.addressLookups = 0;
    for (const index of this.indexes.values()) index.clear();
    for (const field of [...this.indexes.keys()]) if (!ALWAYS_INDEXED.includes(field)) this.indexes.delete(field);
    this.touch();
  }
}
