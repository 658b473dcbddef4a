/**
 * `audience/subscribe` (email/SMS permission inside an audience, for its members only) and
 * `person/subscriptions` (each person's audiences and global permissions).
 * @module
 */
import type { ResponseMap } from '../api/index.js';
import { fail } from './errors.js';
import { personValue } from './people/view.js';
import type { Store } from './store.js';
import type { Person } from './records.js';

interface PersonRef {
  email?: string;
  person_id?: string;
  external_id?: string;
}

/** The person a reference names: by ID, else email, else external ID. */
export function findByRef(store: Store, ref: PersonRef): Person | undefined {
  if (ref.person_id !== undefined) return store.people.get(ref.person_id);
  if (ref.email !== undefined) return store.peopleBy('str::email', ref.email)[0];
  if (ref.external_id !== undefined) return store.peopleBy('str::ei', ref.external_id)[0];
  return undefined;
}

type SubscribeEntry = ResponseMap['audience/subscribe']['people'][number];

export function audienceSubscribe(store: Store, body: Record<string, unknown>): ResponseMap['audience/subscribe'] {
  const audienceId = body['audience_id'] as string;
  if (!store.audiences.has(audienceId))
    fail(`No audience has ID ${JSON.stringify(audienceId)}; audiences are created in the product (declare them in the emulator's --data file)`);
  const now = store.nowIso();
  let changed = false;
  const people = (body['people'] as Array<PersonRef & { subscribed?: boolean; sms_opted_in?: boolean }>).map((ref): SubscribeEntry => {
    const person = findByRef(store, ref);
    if (!person || person.archived)
      return { person_status: 'not_found', status: 'not_member', error: 'No active person matches this email, person_id or external_id' };
    const membership = person.audiences[audienceId];
    if (!membership)
      return {
        person_status: 'merged',
        status: 'not_member',
        person_id: person.id,
        error: `Person is not a member of audience ${audienceId}; only members' permissions can be set`,
      };
    if (ref.subscribed !== undefined && ref.subscribed !== membership.subscribed) {
      membership.subscribed = ref.subscribed;
      membership.subscribed_from = now;
      changed = true;
    }
    if (ref.sms_opted_in !== undefined && ref.sms_opted_in !== membership.sms_opted_in) {
      membership.sms_opted_in = ref.sms_opted_in;
      changed = true;
    }
    return { person_status: 'merged', status: membership.subscribed ? 'subscribed' : 'unsubscribed', person_id: person.id };
  });
  if (changed) store.touch();
  return { audience_id: audienceId, people };
}

export function personSubscriptions(store: Store, body: Record<string, unknown>): ResponseMap['person/subscriptions'] {
  return {
    people: (body['people'] as PersonRef[]).map((ref) => {
      const person = findByRef(store, ref);
      if (!person) {
        const out: ResponseMap['person/subscriptions']['people'][number] = {
          person_status: 'not_found',
          subscriptions: [],
          email_permissions: false,
          sms_permissions: false,
        };
        if (ref.email !== undefined) out.email = ref.email;
        return out;
      }
      const subscriptions = Object.entries(person.audiences).map(([audienceId, m]) => ({
        audience_id: audienceId,
        audience_name: store.audiences.get(audienceId)?.name ?? audienceId,
        member_from: m.member_from,
        subscribed: m.subscribed,
        subscribed_from: m.subscribed_from,
        sms_opted_in: m.sms_opted_in,
      }));
      const out: ResponseMap['person/subscriptions']['people'][number] = {
        person_status: person.archived ? 'archived' : 'merged',
        person_id: person.id,
        subscriptions,
        email_permissions: personValue(store, person, 'bol::p') === true,
        sms_permissions: personValue(store, person, 'bol::sp') === true,
      };
      const email = person.fields['str::email'];
      if (typeof email === 'string') out.email = email;
      return out;
    }),
  };
}
