/**
 * The demo's starting data, put into the emulator through the platform API itself (the typed
 * client), so it is exactly what a real instance would hold after the same calls.
 * @module
 */
import type { Client } from '../client/index.js';
import type { RequestOf } from '../api/index.js';

/** The activities the demo pages send; the relay's demo site accepts these and no others. */
export const DEMO_ACTIVITIES = ['act:cm:page-view', 'act:cm:added-to-cart', 'act:cm:signed-up'] as const;

const DEFINITIONS: Array<RequestOf<'definitions/activity/create'>> = [
  {
    name: 'page-view',
    icon_id: 'page-illustration-icon',
    attributes: ['url', 'path', 'title', 'referrer'].map((name) => ({ name, display_type: 'text' as const, field_id: 'do-not-map' })),
  },
  {
    name: 'added-to-cart',
    icon_id: 'moneys-illustration-icon',
    attributes: [
      { name: 'product', display_type: 'text', field_id: 'do-not-map' },
      { name: 'price', display_type: 'decimal', field_id: 'do-not-map' },
    ],
  },
  { name: 'signed-up', icon_id: 'happy-illustration-icon', attributes: [{ name: 'plan', display_type: 'text', field_id: 'do-not-map' }] },
];

const PEOPLE: RequestOf<'person/merge'> = {
  merge_by: ['str::email'],
  people: [
    {
      fields: { 'str::email': 'ada@example.com', 'str::first': 'Ada', 'str::last': 'Lovelace' },
      tags: ['customer', 'newsletter'],
      location: { custom: { city_name: 'London', country_name: 'United Kingdom' } },
    },
    {
      fields: { 'str::email': 'grace@example.com', 'str::first': 'Grace', 'str::last': 'Hopper' },
      tags: ['customer'],
      location: { custom: { city_name: 'New York', country_name: 'United States' } },
    },
    { fields: { 'str::email': 'alan@example.com', 'str::first': 'Alan', 'str::last': 'Turing' }, tags: ['trial'] },
  ],
};

/** Creates the demo's activity definitions, three people, their tags and one account. */
export async function seedDemo(client: Client): Promise<void> {
  for (const definition of DEFINITIONS) await client.definitions.createActivity(definition);
  const people = await client.person.merge(PEOPLE);
  const merged = await client.accounts.merge({
    merge_by: ['str:o:name'],
    accounts: [{ fields: { 'str:o:name': 'Analytical Engines Ltd' }, tags: ['enterprise'] }],
  });
  const accountId = merged.accounts?.[0]?.account_id;
  if (accountId === undefined) throw new Error('seeding the demo: accounts/merge answered without an account_id');
  // Ada and Grace work there; Alan is on a trial of his own.
  const ids = (people.people ?? []).slice(0, 2).flatMap((p) => (p.person_id ? [p.person_id] : []));
  await client.accounts.addContacts({ accounts_id: accountId, inclusion_ids: ids });
}
