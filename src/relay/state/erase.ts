/**
 * Erasure at the relay: a person named by one identifier (an email or an external id), the
 * entries of the outbox that name them, and the suppression list that keeps items naming them
 * out afterwards. Every store matches entries with {@link namesPerson} and keeps the list as
 * {@link Suppression}s: hashes, never the identifier (docs/security.md).
 * @module
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { identifierKey } from '../../api/fields.js';

/** The identifiers an erasure names a person by, and the person field each is. */
export const ERASE_FIELDS = { email: 'str::email', external_id: 'str::ei' } as const;
export type EraseBy = keyof typeof ERASE_FIELDS;

/** How long a person stays suppressed after an erasure, unless the request says otherwise: 30 days. */
export const SUPPRESS_DAYS = 30;

/** A person as the outbox matches them: a person field and its value as the platform compares it. */
export interface Person {
  field: string;
  /** {@link identifierKey} of the value: an email trimmed and in lower case */
  key: string;
}

/** What an erasure did in one store. */
export interface Erased {
  /** waiting entries dropped */
  waiting: number;
  /** dead letters dropped */
  dead: number;
  /** entries under a live lease (a call may be carrying them now): left for their deliverer, see docs/security.md */
  inFlight: number;
}

/** One row of the suppression list: `site` '' for every site of the deployment. */
export interface Suppression {
  site: string;
  hash: string;
}

export const personOf = (by: EraseBy, value: string): Person => ({ field: ERASE_FIELDS[by], key: identifierKey(ERASE_FIELDS[by], value) });

const encoder = new TextEncoder();
/** The hash a person is suppressed by: SHA-256 of the field and the compared value (`field\0key`), in hex. */
export const personHash = (person: Person | string): string =>
  bytesToHex(sha256(encoder.encode(typeof person === 'string' ? person : `${person.field}\u0000${person.key}`)));

/** A stored value as compared, when it is a string. */
export const identifierKeyOf = (field: string, value: unknown): string | undefined => (typeof value === 'string' ? identifierKey(field, value) : undefined);

/** The person an entry names by `field` (its `fields`, as identify and track entries carry them), as compared. */
export function namedKey(entry: Record<string, unknown>, field: string): string | undefined {
  const fields = entry['fields'];
  if (typeof fields !== 'object' || fields === null) return undefined;
  return identifierKeyOf(field, (fields as Record<string, unknown>)[field]);
}

/** Whether the item is `person`'s (within `site`, when given). */
export const namesPerson = (item: { site: string; entry: Record<string, unknown> }, person: Person, site: string | undefined): boolean =>
  (site === undefined || item.site === site) && namedKey(item.entry, person.field) === person.key;

/** The people `entry` names by the erasable fields, as hashed (`field\0key`: see {@link personHash}). */
export function namedPeople(entry: Record<string, unknown>): string[] {
  const named: string[] = [];
  for (const field of Object.values(ERASE_FIELDS)) {
    const key = namedKey(entry, field);
    if (key !== undefined) named.push(`${field}\u0000${key}`);
  }
  return named;
}

export const NOTHING_ERASED: Erased = { waiting: 0, dead: 0, inFlight: 0 };
export const addErased = (a: Erased, b: Erased): Erased => ({ waiting: a.waiting + b.waiting, dead: a.dead + b.dead, inFlight: a.inFlight + b.inFlight });
