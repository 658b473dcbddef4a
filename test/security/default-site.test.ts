// Attack: under a site's default settings (no `verify` set; a secret set, as a site with logins
// has), anonymous browsers name a real person's email. Measured before: 60 anonymous tracks were
// all answered `accepted`, 50 landed on the person's timeline and spent their daily allowance of
// 50 events per activity, so the person's own events were refused for the rest of the day; and an
// anonymous identify created a stranger's person, subscribed (`bol::p`). Now nothing an anonymous
// browser sends reaches a person it did not prove, and a person it creates is not subscribed.
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, itemId, KEY, type Stack, startStack, until } from './support.js';

const SECRET = 'default-site-identity-secret-0123456789';
const SITE = 'pk_default';
const ORIGIN = 'https://shop.example.com';
const ACTIVITY = 'act:cm:signed-up';
const serverHash = (field: string, value: string) => createHmac('sha256', SECRET).update(`${field}\n${value}`).digest('hex');

interface Person {
  id: string;
  fields: Record<string, unknown>;
  tags: string[];
  events: unknown[];
}

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    env: {
      RELAY_IDENTITY_SECRET: SECRET,
      // The defaults: no verify, no subscribe_unverified, the default visitor limit.
      RELAY_SITES: JSON.stringify([{ key: SITE, origins: [ORIGIN] }]),
    },
  });
});
afterAll(() => stack?.close());

async function people(): Promise<Person[]> {
  const response = await fetch(`${stack.emulator.url}/_emulator/state`, { headers: { 'x-api-key': KEY } });
  return ((await response.json()) as { people: Person[] }).people;
}
const personBy = async (email: string) => (await people()).find((person) => person.fields['str::email'] === email);

const results = async (response: Response) => {
  expect(response.status).toBe(200);
  return ((await response.json()) as { results: { status: string; reason?: string }[] }).results;
};
const track = (email: string, extra: Record<string, unknown> = {}) => ({
  id: itemId(),
  type: 'track',
  activity_id: ACTIVITY,
  attributes: { 'str:cm:plan': 'hijacked' },
  person: { 'str::email': email, 'str::first': 'Mallory' },
  ...extra,
});

describe('anonymous browsers against a site with default settings', () => {
  it("60 tracks naming a person's email and an identify naming a stranger's: the person's timeline is unchanged, no one is subscribed, and the person's own events still land", async () => {
    const victim = 'victim@example.com';
    const stranger = 'stranger@example.com';
    const seeded = await fetch(`${stack.emulator.url}/v1/person/merge`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY },
      body: JSON.stringify({ merge_by: ['str::email'], people: [{ fields: { 'str::email': victim, 'str::first': 'Victoria' } }] }),
    });
    expect(seeded.ok).toBe(true);
    const before = await until('the victim', () => personBy(victim));

    // Three anonymous browsers (no user_hash, no identity token), 20 tracks each.
    const answers = await Promise.all(
      ['198.51.100.1', '198.51.100.2', '198.51.100.3'].map(async (ip) =>
        results(
          await collect(
            stack.relay.url,
            ip,
            Array.from({ length: 20 }, () => track(victim)),
            { key: SITE },
          ),
        ),
      ),
    );
    const anonymousIdentify = await results(
      await collect(
        stack.relay.url,
        '198.51.100.4',
        [{ id: itemId(), type: 'identify', fields: { 'str::email': stranger, 'str::first': 'Signed', 'bol::p': true } }],
        { key: SITE },
      ),
    );
    await stack.relay.drained();

    // None of the tracks was taken: each says why, so a site sees what it lost.
    expect(answers.flat()).toHaveLength(60);
    expect(new Set(answers.flat().map((result) => `${result.status}/${result.reason}`))).toEqual(new Set(['rejected/unverified']));
    const after = await personBy(victim);
    expect(after?.events).toEqual(before.events);
    expect(after?.fields).toEqual(before.fields);
    // The stranger's person may exist (a sign-up form creates people), but is not subscribed.
    expect(anonymousIdentify[0]?.status).toBe('accepted');
    const created = await until('the stranger', () => personBy(stranger));
    expect(created.fields['bol::p']).toBe(false);
    expect((await people()).filter((person) => person.fields['bol::p'] === true && person.id !== before.id)).toEqual([]);

    // The victim's own browser, signed in by the site's server, still gets its 50 events of the day.
    const own = await results(
      await collect(
        stack.relay.url,
        '203.0.113.9',
        Array.from({ length: 50 }, () => track(victim, { person: { 'str::email': victim }, user_hash: serverHash('str::email', victim) })),
        { key: SITE },
      ),
    );
    expect(new Set(own.map((result) => result.status))).toEqual(new Set(['accepted']));
    await until('the victim’s own 50 events', async () => ((await personBy(victim))?.events.length ?? 0) === before.events.length + 50);
  });
});
