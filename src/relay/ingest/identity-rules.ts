/**
 * Who may write which person: the relay's identity rules, in one place and free of I/O (the only
 * work is HMAC). Given a site, the checked items of one request, the identity token it carried
 * and the site's {@link Identity}, each item comes back rejected, or reduced to what this browser
 * may write together with the kind of platform call it goes in ({@link EntryKind}).
 *
 * An identifier is one of the site's `merge_by` fields named by an item. It is proven when a
 * `user_hash` of this request (on any of its items) or the browser's identity token vouches for
 * that field and value. Then:
 * - an item that proves at least one identifier is verified: it is forwarded with its unproven
 *   identifiers stripped (`merge` may change its person; `activity`);
 * - an item that proves none is unverified: under `verify: "required"` it is rejected
 *   (`unverified`); under `"optional"` (the default) an identify may create a person but never
 *   change an existing one: one identifier, no tags, `unset_tags` or location (`merge-create`),
 *   and a track is rejected (`unverified`): it would land on whoever its identifier names, and
 *   spend that person's daily allowance. `"open"` lets such a track add its activity, with only
 *   the identifier that names its person. A person an unverified identify creates is not
 *   subscribed (`bol::p` false, no `bol::sp`) unless the site sets `subscribe_unverified`;
 * - under `verify: "off"` the site trusts its browsers and items go as sent;
 * - items of the server door (`POST /server/collect`, a relay token with the `collect` scope) are
 *   vouched for by their server: each is verified and goes as sent ({@link vouchedRulings}), and its
 *   entries prove their person at delivery (core/sites.ts `entryProves`).
 *
 * docs/security.md has the same rules as a table.
 * @module
 */
import type { SiteConfig } from '../core/sites.js';
import type { EntryKind } from '../state/outbox.js';
import type { Identity } from './identity.js';
import type { CheckedItem } from './items.js';

/** Every kind, in the order a request's calls go: people before their activities. */
export const ENTRY_KINDS: readonly EntryKind[] = ['merge', 'merge-create', 'activity'];

/** What the rules decided for one item. */
export type Ruling =
  | {
      ok: true;
      /** the item reduced to what may be written; its `user_hash` is never forwarded */
      item: CheckedItem;
      kind: EntryKind;
      /** false: the entry carries no location at all, not even the visitor's address the relay adds */
      locate: boolean;
      /** at least one identifier proven (always false under `verify: "off"`) */
      verified: boolean;
      /** the identifiers removed because nothing proved them */
      stripped: readonly string[];
    }
  | { ok: false; item: CheckedItem; reason: 'unverified'; error: string };

export interface Rulings {
  /** one per item, in the order given */
  rulings: Ruling[];
  /** token subjects to hand back: those proven by this request's hashes, else those of the token it carried */
  subjects: string[];
  /** when the subjects came from the token carried: its expiry (ms since epoch), which the token handed back keeps */
  expires?: number | undefined;
  /** items that proved nothing (rejected under `required`, reduced under `optional`) */
  unverified: number;
}

/** Value-only hashes (`RELAY_IDENTITY_LEGACY_HASH`) proved the email, else the external ID. */
const LEGACY_FIELDS = ['str::email', 'str::ei'];

const personOf = (item: CheckedItem): Record<string, unknown> => (item.type === 'identify' ? item.input.fields : (item.input.person ?? {}));

/** The site's `merge_by` fields the item names (any value, even null: a null would clear the field). */
const identifiersOf = (item: CheckedItem, mergeBy: readonly string[]): string[] => {
  const person = personOf(item);
  const named: string[] = [];
  for (const field of mergeBy) if (Object.hasOwn(person, field)) named.push(field);
  return named;
};

const provable = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** The first identifier with a value the platform can look up: the one an unverified item keeps. */
const firstUsable = (person: Record<string, unknown>, identifiers: readonly string[]): string | undefined =>
  identifiers.find((field) => provable(person[field]) || typeof person[field] === 'number');

/** Nothing: one shared empty list, read only (most items strip no identifier). */
const NONE: readonly string[] = Object.freeze([]);

const without = (record: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> =>
  fields.length === 0 ? record : Object.fromEntries(Object.entries(record).filter(([field]) => !fields.includes(field)));

const hasHash = (item: CheckedItem) => item.input.user_hash !== undefined;
const NO_ITEMS: readonly CheckedItem[] = Object.freeze([]);

/** Whether `record` has no own key but `field` (a track's person that names only the identifier it keeps). */
function onlyKey(record: Record<string, unknown>, field: string): boolean {
  for (const key in record) if (key !== field && Object.hasOwn(record, key)) return false;
  return Object.hasOwn(record, field);
}

/**
 * The item with its person replaced and, when `bare`, its tags and location removed; the item
 * itself when that changes nothing (its person kept, nothing to remove): rulings are only read.
 */
function reduced(item: CheckedItem, person: Record<string, unknown>, bare: boolean): CheckedItem {
  if (
    personOf(item) === person &&
    (!bare || (item.input.location === undefined && (item.type === 'track' || (item.input.tags === undefined && item.input.unset_tags === undefined))))
  )
    return item;
  // One copy of the input: the rest left by the destructuring is already a new object.
  if (item.type === 'identify') {
    if (!bare) return { ...item, input: { ...item.input, fields: person } };
    const { tags, unset_tags, location, ...rest } = item.input;
    rest.fields = person;
    return { ...item, input: rest };
  }
  if (!bare) return { ...item, input: { ...item.input, person } };
  const { location, ...rest } = item.input;
  rest.person = person;
  return { ...item, input: rest };
}

/**
 * An unproven identify's fields as a new person gets them: no email permission (the platform
 * subscribes a new person unless `bol::p` says otherwise) and no SMS permission, so a stranger's
 * address typed into a form is never signed up, unless the site chose `subscribe_unverified`.
 */
function unsubscribed(fields: Record<string, unknown>, subscribe: boolean): Record<string, unknown> {
  if (subscribe) return fields;
  const { 'bol::sp': sms, ...rest } = fields;
  return { ...rest, 'bol::p': false };
}

/** `merge` for an identify that may change its person, `merge-create` for one that may only create; tracks are activities. */
const kindOf = (item: CheckedItem, mayChange: boolean): EntryKind => (item.type === 'track' ? 'activity' : mayChange ? 'merge' : 'merge-create');

/** The rulings of the server door: its server vouches for every person it names, so each item is verified and goes whole. */
export function vouchedRulings(items: readonly CheckedItem[]): Rulings {
  const rulings = items.map((item): Ruling => ({ ok: true, item, kind: kindOf(item, true), locate: true, verified: true, stripped: NONE }));
  return { rulings, subjects: [], unverified: 0 };
}

/** Applies the identity rules to one request's items. */
export async function applyIdentityRules(
  site: Pick<SiteConfig, 'key' | 'verify' | 'mergeBy' | 'subscribeUnverified'>,
  items: readonly CheckedItem[],
  token: string | undefined,
  identity: Identity | undefined,
  now: number,
): Promise<Rulings> {
  if (site.verify === 'off') {
    const rulings = items.map((item): Ruling => ({ ok: true, item, kind: kindOf(item, true), locate: true, verified: false, stripped: NONE }));
    return { rulings, subjects: [], unverified: 0 };
  }

  // Every proof of the request counts for all its items: one browser sent them all, in one body.
  const carried = identity ? await identity.open(site.key, token, now) : undefined;
  const known = new Set(carried?.subjects);
  const fresh = new Set<string>();
  const digests = new Map<string, string>();
  const digestOf = (field: string, value: unknown) => (provable(value) ? digests.get(`${field}\n${value}`) : undefined);
  // Most requests carry no hash: no list of none made for them.
  const hashed = items.some(hasHash) ? items.filter(hasHash) : NO_ITEMS;
  if (identity && (known.size > 0 || hashed.length > 0)) {
    const proofs = memoised(identity);
    const pairs = new Map<string, [string, string]>();
    for (const item of items) {
      const person = personOf(item);
      for (const field of identifiersOf(item, site.mergeBy)) {
        const value = person[field];
        if (provable(value)) pairs.set(`${field}\n${value}`, [field, value]);
      }
    }
    // The HMACs start together: WebCrypto answers asynchronously (on Node, from its thread pool).
    await Promise.all([...pairs].map(async ([key, [field, value]]) => digests.set(key, await identity.subject(site.key, field, value))));
    const proved = await Promise.all(
      hashed.flatMap((item) => {
        const person = personOf(item);
        return identifiersOf(item, site.mergeBy).map(async (field) => {
          const value = person[field];
          return provable(value) && (await hashProves(proofs, item.input.user_hash!, field, value, person)) ? digestOf(field, value) : undefined;
        });
      }),
    );
    for (const digest of proved) {
      if (digest === undefined) continue;
      known.add(digest);
      fresh.add(digest);
    }
  }

  let unverified = 0;
  const rulings: Ruling[] = [];
  for (const item of items) {
    const person = personOf(item);
    const identifiers = identifiersOf(item, site.mergeBy);
    // No subject known (no token carried, no hash that proved one): nothing to look up.
    const proven =
      known.size === 0
        ? NONE
        : identifiers.filter((field) => {
            const digest = digestOf(field, person[field]);
            return digest !== undefined && known.has(digest);
          });
    if (proven.length > 0) {
      const unproven = identifiers.filter((field) => !proven.includes(field));
      rulings.push({
        ok: true,
        item: reduced(item, without(person, unproven), false),
        kind: kindOf(item, true),
        locate: true,
        verified: true,
        stripped: unproven,
      });
      continue;
    }
    unverified++;
    if (site.verify === 'required') {
      rulings.push({ ok: false, item, reason: 'unverified', error: unverifiedMessage(item, identifiers, site.mergeBy) });
      continue;
    }
    if (item.type === 'track' && site.verify === 'optional') {
      rulings.push({ ok: false, item, reason: 'unverified', error: unverifiedMessage(item, identifiers, site.mergeBy) });
      continue;
    }
    const kept = firstUsable(person, identifiers);
    const others = identifiers.length === (kept === undefined ? 0 : 1) ? NONE : identifiers.filter((field) => field !== kept);
    // A track changes nothing on its person: only the identifier that names them goes along (the person itself when that is all it names).
    const named =
      item.type === 'track'
        ? kept === undefined
          ? {}
          : onlyKey(person, kept)
            ? person
            : { [kept]: person[kept] }
        : unsubscribed(without(person, others), site.subscribeUnverified === true);
    rulings.push({ ok: true, item: reduced(item, named, true), kind: kindOf(item, false), locate: false, verified: false, stripped: others });
  }
  if (fresh.size > 0) return { rulings, subjects: [...fresh], unverified };
  return { rulings, subjects: [...known], expires: carried?.expires, unverified };
}

type Proofs = ReturnType<typeof memoised>;

/** Hash checks, each computed once per request: a batch repeats one person and one hash on every track. */
function memoised(identity: Identity) {
  const cache = new Map<string, Promise<unknown>>();
  const once = <T>(key: string, make: () => Promise<T>): Promise<T> => {
    let value = cache.get(key) as Promise<T> | undefined;
    if (!value) {
      value = make();
      cache.set(key, value);
    }
    return value;
  };
  return {
    proves: (field: string, value: string, hash: string) => once(`p\n${field}\n${value}\n${hash}`, () => identity.proves(field, value, hash)),
    provesLegacy: (value: string, hash: string) => once(`l\n${value}\n${hash}`, () => identity.provesLegacy(value, hash)),
  };
}

/** Whether `hash` (one string, or one per field) proves `field` = `value`. */
async function hashProves(
  identity: Proofs,
  hash: string | Readonly<Record<string, string>>,
  field: string,
  value: string,
  person: Record<string, unknown>,
): Promise<boolean> {
  if (typeof hash !== 'string') {
    const own = Object.hasOwn(hash, field) ? hash[field] : undefined;
    return own !== undefined && identity.proves(field, value, own);
  }
  if (await identity.proves(field, value, hash)) return true;
  // The value-only form proved one field only: the email, else the external ID.
  const legacyField = LEGACY_FIELDS.find((candidate) => provable(person[candidate]));
  return legacyField === field && identity.provesLegacy(value, hash);
}

/** Why an item proved nothing; names fields, never their values. */
function unverifiedMessage(item: CheckedItem, identifiers: readonly string[], mergeBy: readonly string[]): string {
  if (identifiers.length === 0) return `identity not verified: the ${item.type} names no person by ${mergeBy.join(' or ')}`;
  return item.type === 'identify'
    ? `identity not verified: none of ${identifiers.join(', ')} is proven; send user_hash = hex HMAC-SHA256 of the field ID, a newline and the value under the site's secret`
    : `identity not verified: none of ${identifiers.join(', ')} of this track is proven for this browser; send its user_hash, or identify with one first`;
}
