/**
 * `tags/get`: a bare array of tag records (recorded), filtered by token search — every word
 * of `q` must appear in the name, in any order, inside longer words too. Counts are worked
 * out on each call from the people holding the tag, so they are always current.
 * @module
 */
import type { ResponseMap } from '../api/index.js';
import { personValue } from './people/view.js';
import type { Store } from './store.js';

export function tagsGet(store: Store, instanceId: string, body: Record<string, unknown>): ResponseMap['tags/get'] {
  const words = typeof body['q'] === 'string' ? body['q'].toLowerCase().split(/\s+/).filter(Boolean) : [];
  const counts = new Map<number, { count: number; sms: number; subscribers: number }>();
  const add = (id: number, sms: boolean, subscriber: boolean) => {
    let entry = counts.get(id);
    if (!entry) {
      entry = { count: 0, sms: 0, subscribers: 0 };
      counts.set(id, entry);
    }
    entry.count++;
    if (sms) entry.sms++;
    if (subscriber) entry.subscribers++;
  };
  for (const person of store.people.values()) {
    if (person.archived || person.tags.length === 0) continue;
    const sms = personValue(store, person, 'bol::sp') === true;
    const subscriber = personValue(store, person, 'bol::p') === true;
    for (const id of person.tags) add(id, sms, subscriber);
  }
  for (const account of store.accounts.values()) if (!account.archived) for (const id of account.tags) add(id, false, false);
  return [...store.tags.values()]
    .filter((tag) => words.every((word) => tag.name.toLowerCase().includes(word)))
    .map((tag) => {
      const entry = counts.get(tag.id);
      return { ...tag, instance_id: instanceId, count: entry?.count ?? 0, sms_opted_in: entry?.sms ?? 0, subscribers: entry?.subscribers ?? 0 };
    });
}
