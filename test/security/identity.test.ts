/**
 * "Never let a visitor write someone else's profile", tried the way an attacker would: a real
 * emulator and a real relay on loopback, requests sent only to the relay's public /collect.
 * Every attack reads the victim's profile from the emulator before and after, and asserts it
 * did not change (its new activities aside: any visitor may add activities). docs/security.md
 * has the rules these tests hold the relay to.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemId, KEY, ORIGIN, type Stack, startStack, until } from './support.js';

const SECRET = 'security-identity-secret-0123456789';
const ACTIVITY = 'act:cm:signed-up';
const SITES = { required: 'pk_required', optional: 'pk_optional', open: 'pk_open', unset: 'pk_unset' } as const;
type Site = keyof typeof SITES;

/** What the site's own server renders: exactly the documented formula, not the library's helper. */
const serverHash = (field: string, value: string) => createHmac('sha256', SECRET).update(`${field}\n${value}`).digest('hex');

let stack: Stack;
beforeAll(async () => {
  const busy = { per_second: 1000, burst: 1000 };
  stack = await startStack({
    env: {
      RELAY_IDENTITY_SECRET: SECRET,
      RELAY_SITES: JSON.stringify([
        { key: SITES.required, origins: [ORIGIN], verify: 'required', visitor_rate_limit: busy },
        { key: SITES.optional, origins: [ORIGIN], verify: 'optional', visitor_rate_limit: busy },
        { key: SITES.open, origins: [ORIGIN], verify: 'open', visitor_rate_limit: busy },
        { key: SITES.unset, origins: [ORIGIN], visitor_rate_limit: busy },
      ]),
    },
  });
});
afterAll(() => stack?.close());

async function platform(path: string, body: unknown): Promise<unknown> {
  const response = await fetch(`${stack.emulator.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

interface Result {
  id: string;
  status: string;
  reason?: string;
  error?: string;
}

/** POST /collect as a browser of `site` would. */
async function collect(site: Site, batch: Record<string, unknown>[], identity?: string): Promise<{ results: Result[]; identity?: string }> {
  const response = await fetch(`${stack.relay.url}/collect`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', origin: ORIGIN },
    body: JSON.stringify({ key: SITES[site], batch, ...(identity ? { identity } : {}) }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { results: Result[]; identity?: string };
}

const ts = () => new Date().toISOString();
const identify = (fields: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ id: itemId(), type: 'identify', ts: ts(), fields, ...extra });
const track = (person: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id: itemId(),
  type: 'track',
  ts: ts(),
  activity_id: ACTIVITY,
  attributes: { 'str:cm:plan': 'pro' },
  person,
  ...extra,
});

interface Person {
  id: string;
  fields: Record<string, unknown>;
  tags: string[];
  location: unknown;
  archived: boolean;
  account_id: string | null;
  events: unknown[];
}

/** Everyone, as the emulator holds them (over HTTP). */
async function people(): Promise<Person[]> {
  const response = await fetch(`${stack.emulator.url}/_emulator/state`, { headers: { 'x-api-key': KEY } });
  return ((await response.json()) as { people: Person[] }).people;
}
const personBy = async (field: string, value: string) => (await people()).find((person) => person.fields[field] === value);

/** A person's profile: everything but their activities (anyone may add those) and the touch time. */
async function profile(id: string) {
  const person = (await people()).find((candidate) => candidate.id === id);
  if (!person) throw new Error(`person ${id} is gone`);
  return { fields: person.fields, tags: [...person.tags].sort(), location: person.location, archived: person.archived, account_id: person.account_id };
}
const eventCount = async (id: string) => (await people()).find((person) => person.id === id)?.events.length ?? 0;

let counter = 0;
/** A known person with every kind of data an attacker would like to change. */
async function seedVictim() {
  const n = counter++;
  const victim = { email: `victim-${n}@example.com`, ei: `victim-${n}-ei` };
  await platform('/v1/person/merge', {
    merge_by: ['str::email'],
    people: [
      {
        fields: { 'str::email': victim.email, 'str::ei': victim.ei, 'str::first': 'Victoria' },
        tags: ['customer'],
        location: { custom: { city_name: 'Lyon', country_name: 'France' } },
      },
    ],
  });
  const person = await until('the victim', () => personBy('str::email', victim.email));
  return { ...victim, id: person.id, before: await profile(person.id) };
}
const fresh = (label: string) => `${label}-${counter++}@example.com`;

describe('attacks under verify "required"', () => {
  it("own email + valid user_hash + a victim's str::ei: the ei is stripped and the victim is unchanged", async () => {
    const victim = await seedVictim();
    const me = fresh('mallory');
    const answer = await collect('required', [
      identify({ 'str::email': me, 'str::ei': victim.ei, 'str::first': 'Mallory' }, { tags: ['pwned'], user_hash: serverHash('str::email', me) }),
    ]);
    expect(answer.results[0]).toMatchObject({ status: 'accepted' });
    // The proven part still lands on the attacker's own person, without the victim's merge key.
    const mine = await until('the attacker’s person', () => personBy('str::email', me));
    expect(await profile(victim.id)).toEqual(victim.before);
    expect(mine.fields).toMatchObject({ 'str::first': 'Mallory' });
    expect(mine.fields['str::ei']).toBeUndefined();
  });

  it('a hash made for an external ID, presented as proof of the same string as an email, proves nothing', async () => {
    const victim = await seedVictim();
    // The attacker chose the victim's email as their own external ID, and the site's server signed it.
    const forEi = serverHash('str::ei', victim.email);
    const answer = await collect('required', [
      identify({ 'str::email': victim.email, 'str::first': 'Mallory' }, { user_hash: forEi }),
      track({ 'str::email': victim.email, 'str::first': 'Mallory' }, { user_hash: forEi }),
      identify({ 'str::email': victim.email, 'str::first': 'Mallory' }, { user_hash: { 'str::email': forEi } }),
    ]);
    expect(await profile(victim.id)).toEqual(victim.before);
    expect(answer.results.map((result) => [result.status, result.reason])).toEqual([
      ['rejected', 'unverified'],
      ['rejected', 'unverified'],
      ['rejected', 'unverified'],
    ]);
    expect(answer.identity).toBeUndefined();
  });
});

describe('attacks under verify "optional" (no proof at all)', () => {
  it('an identify naming a known email with new fields, tags, unset_tags and location changes no one; a new email still creates a person', async () => {
    const victim = await seedVictim();
    const newcomer = fresh('newcomer');
    const answer = await collect('optional', [
      identify(
        { 'str::email': victim.email, 'str::first': 'Mallory', 'str::last': 'Evil', 'str::ei': 'mallory-ei' },
        { tags: ['hacked'], unset_tags: ['customer'], location: { custom: { city_name: 'Nowhere' } } },
      ),
      identify({ 'str::email': newcomer, 'str::first': 'Nina' }, { tags: ['hacked'] }),
    ]);
    expect(answer.results.map((result) => result.status)).toEqual(['accepted', 'accepted']);
    const created = await until('the new person', () => personBy('str::email', newcomer));
    expect(await profile(victim.id)).toEqual(victim.before);
    // created with its fields, but nothing an unproven browser may not write (tags)
    expect(created.fields).toMatchObject({ 'str::first': 'Nina' });
    expect(created.tags).toEqual([]);
  });

  it('under verify "open", an unverified track naming the victim\'s email and a new str::ei leaves the victim\'s ei (and location) alone', async () => {
    const victim = await seedVictim();
    const answer = await collect('open', [
      track({ 'str::email': victim.email, 'str::ei': 'mallory-ei', 'str::first': 'Mallory' }, { location: { custom: { city_name: 'Nowhere' } } }),
    ]);
    expect(answer.results[0]).toMatchObject({ status: 'accepted' });
    await until('the activity on the victim', async () => (await eventCount(victim.id)) > 0);
    expect(await profile(victim.id)).toEqual(victim.before);
  });

  it('a site that does not set verify keeps the promise too: an unproven identify of a known email changes no one', async () => {
    const victim = await seedVictim();
    const newcomer = fresh('default-newcomer');
    const answer = await collect('unset', [
      identify({ 'str::email': victim.email, 'str::first': 'Mallory' }, { tags: ['hacked'] }),
      identify({ 'str::email': newcomer, 'str::first': 'Nina' }),
    ]);
    expect(answer.results.map((result) => result.status)).toEqual(['accepted', 'accepted']);
    await until('the new person', () => personBy('str::email', newcomer));
    expect(await profile(victim.id)).toEqual(victim.before);
  });
});

describe('attacks with a second identifier or a malformed proof', () => {
  it('a track with a proven email and an unproven second merge_by field: the second is stripped', async () => {
    const victim = await seedVictim();
    const me = fresh('second');
    const answer = await collect('optional', [
      track({ 'str::email': me, 'str::ei': victim.ei, 'str::first': 'Mallory' }, { user_hash: serverHash('str::email', me) }),
    ]);
    expect(answer.results[0]).toMatchObject({ status: 'accepted' });
    const mine = await until('the attacker’s person with the activity', async () => {
      const person = await personBy('str::email', me);
      return person && person.events.length > 0 && person;
    });
    expect(await profile(victim.id)).toEqual(victim.before);
    expect(mine.fields['str::ei']).toBeUndefined();
  });

  it('a 50 KB user_hash is refused as invalid, at once, and changes no one', async () => {
    const victim = await seedVictim();
    const huge = 'a'.repeat(50_000);
    const started = performance.now();
    const optional = await collect('optional', [track({ 'str::email': victim.email, 'str::ei': 'mallory-ei' }, { user_hash: huge })]);
    const required = await collect('required', [identify({ 'str::email': victim.email, 'str::first': 'Mallory' }, { user_hash: huge })]);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(await profile(victim.id)).toEqual(victim.before);
    for (const answer of [optional, required]) {
      expect(answer.results[0]).toMatchObject({ status: 'rejected', reason: 'invalid' });
      expect(answer.results[0]!.error).not.toContain('aaaa');
    }
  });

  it('a hash object whose hash is for another field proves nothing', async () => {
    const victim = await seedVictim();
    const forEi = serverHash('str::ei', victim.email);
    const optional = await collect('optional', [
      track({ 'str::email': victim.email, 'str::ei': 'mallory-ei', 'str::first': 'Mallory' }, { user_hash: { 'str::email': forEi } }),
    ]);
    expect(optional.results[0]).toMatchObject({ status: 'rejected', reason: 'unverified' });
    const open = await collect('open', [
      track({ 'str::email': victim.email, 'str::ei': 'mallory-ei', 'str::first': 'Mallory' }, { user_hash: { 'str::email': forEi } }),
    ]);
    // Unproven, so under "open" the track may only name its person: the victim gets an activity and nothing else.
    expect(open.results[0]).toMatchObject({ status: 'accepted' });
    await until('the activity on the victim', async () => (await eventCount(victim.id)) > 0);
    expect(await profile(victim.id)).toEqual(victim.before);
    const required = await collect('required', [identify({ 'str::email': victim.email, 'str::first': 'Mallory' }, { user_hash: { 'str::ei': forEi } })]);
    expect(required.results[0]).toMatchObject({ status: 'rejected', reason: 'unverified' });
    expect(await profile(victim.id)).toEqual(victim.before);
  });
});

describe('what a proven browser may still do', () => {
  it('a proven identify updates its own person, and the token it gets lets later tracks name them', async () => {
    const ann = await seedVictim();
    const first = await collect('required', [
      identify({ 'str::email': ann.email, 'str::first': 'Annie' }, { tags: ['vip'], user_hash: serverHash('str::email', ann.email) }),
    ]);
    expect(first.results[0]).toMatchObject({ status: 'accepted' });
    expect(first.identity).toEqual(expect.any(String));
    const updated = await until('the update', async () => {
      const now = await profile(ann.id);
      return now.fields['str::first'] === 'Annie' && now;
    });
    expect(updated.tags).toEqual(['customer', 'vip']);

    const later = await collect('required', [track({ 'str::email': ann.email })], first.identity);
    expect(later.results[0]).toMatchObject({ status: 'accepted' });
    await until('the tracked activity', async () => (await eventCount(ann.id)) > 0);
  });

  it('a track proven by its own user_hash (one hash, or one per field) is accepted and lands on its person', async () => {
    const bob = await seedVictim();
    const answer = await collect('required', [
      track({ 'str::email': bob.email, 'str::first': 'Robert' }, { user_hash: serverHash('str::email', bob.email) }),
      track(
        { 'str::email': bob.email, 'str::ei': bob.ei },
        { user_hash: { 'str::email': serverHash('str::email', bob.email), 'str::ei': serverHash('str::ei', bob.ei) } },
      ),
    ]);
    expect(answer.results.map((result) => result.status)).toEqual(['accepted', 'accepted']);
    await until('both activities', async () => (await eventCount(bob.id)) === 2);
    expect((await profile(bob.id)).fields['str::first']).toBe('Robert');
  });
});
