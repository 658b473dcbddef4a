/**
 * The demo's starting data, put into the emulator through the platform API itself (the typed
 * client), so it is exactly what a real instance would hold after the same calls. The
 * definitions come from the demo's tracking plan, demo/cdp-edge.plan.json.
 * @module
 */
import { join } from 'node:path';
import type { RequestOf } from '../api/index.js';
import type { Client } from '../client/index.js';
import { readPlanFile } from '../plan/files.js';
import { seedPlan } from '../plan/push.js';
import { packageRoot } from './files.js';

/** The demo's tracking plan: its activities, attributes, person fields and what the demo site may send. */
export const demoPlanFile = (): string => join(packageRoot(), 'demo', 'cdp-edge.plan.json');

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

/** Creates the demo plan's custom fields and activity definitions, three people, their tags and one account. */
export async function seedDemo(client: Client): Promise<void> {
  await seedPlan(client, readPlanFile(demoPlanFile()));
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
