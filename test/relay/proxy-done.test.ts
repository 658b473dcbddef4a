/**
 * Done when (issue 6): servers reach the platform only through the relay, each with its own
 * token. Real parts on loopback: the emulator as the platform, the relay's Node entry in front,
 * the typed client as the server's code.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, HTTPError } from '../../src/client/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';
import { createToken } from '../../src/relay/core/tokens.js';

const KEY = 'done-when-platform-key-31a7';
const PEOPLE = 730;

describe('issue 6 done: scoped tokens through the relay to the emulator', () => {
  let emulator: RunningEmulator;
  let relay: RunningRelay;
  const tokens: Record<'read' | 'write', string> = { read: '', write: '' };
  const seeded = new Set<string>();

  beforeAll(async () => {
    emulator = await startEmulator({ port: 0, key: KEY, plan: 'business' });
    const read = await createToken({ name: 'reporting', scopes: ['read'] });
    const write = await createToken({ name: 'crm-sync', scopes: ['write'] });
    tokens.read = read.token;
    tokens.write = write.token;
    relay = await startRelay({
      port: 0,
      env: { CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, RELAY_TOKENS: JSON.stringify([read.entry, write.entry]), RELAY_LOG: 'off' },
    });
    // The platform's own key fills it; the servers below never see that key.
    const admin = createClient({ apiKey: KEY, baseUrl: emulator.url });
    const people = Array.from({ length: PEOPLE }, (_, i) => ({ fields: { 'str::email': `person${i}@example.com`, 'str::first': `P${i}` } }));
    await admin.person.merge({ people });
    for (const person of people) seeded.add(person.fields['str::email']);
  });
  afterAll(async () => {
    await relay?.close();
    await emulator?.close();
  });

  it('a server holding only a read token pages through every person with the typed client', async () => {
    const client = createClient({ baseUrl: relay.url, token: tokens.read });
    const emails = new Set<string>();
    let pages = 0;
    for await (const page of client.person.pages({ limit: 100, fields: ['str::email'] })) {
      pages += 1;
      for (const person of page.contacts ?? []) emails.add(String(person.fields?.['str::email']));
      expect(pages).toBeLessThan(50);
    }
    expect(pages).toBeGreaterThanOrEqual(Math.ceil(PEOPLE / 100));
    for (const email of seeded) expect(emails.has(email), email).toBe(true);

    const refused = await client.person.merge({ people: [{ fields: { 'str::email': 'sneaky@example.com' } }] }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(HTTPError);
    expect(refused).toMatchObject({ status: 403, code: 'forbidden' });
  });

  it('a write token can merge but not delete, and the refused delete leaves the person in place', async () => {
    const writer = createClient({ baseUrl: relay.url, token: tokens.write });
    const reader = createClient({ baseUrl: relay.url, token: tokens.read });
    const merged = await writer.person.merge({ people: [{ fields: { 'str::email': 'kept@example.com', 'str::first': 'Kept' } }] });
    const id = merged.people?.[0]?.person_id;
    expect(merged.people?.[0]?.status).toBe('created');
    expect(id).toMatch(/^[0-9a-f]{24}$/);

    await writer.person.archive({ inclusion_ids: [id!] });
    const refused = await writer.person.delete({ inclusion_ids: [id!] }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(HTTPError);
    expect(refused).toMatchObject({ status: 403, code: 'forbidden' });

    const archived: string[] = [];
    for await (const person of reader.person.all({ type: 'archived', limit: 100 })) archived.push(person.id);
    expect(archived).toContain(id);
  });

  it('merges 250 people in one ?chunk=true call, results in input order', async () => {
    const people = Array.from({ length: 250 }, (_, i) => ({ fields: { 'str::email': `chunked${i}@example.com` } }));
    const response = await fetch(`${relay.url}/v1/person/merge?chunk=true`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.write}`, 'content-type': 'application/json' },
      body: JSON.stringify({ people }),
    });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { people: { person_id: string; status: string }[] };
    expect(answer.people).toHaveLength(250);
    expect(answer.people.every((p) => p.status === 'created')).toBe(true);

    const reader = createClient({ baseUrl: relay.url, token: tokens.read });
    const ids = answer.people.map((p) => p.person_id);
    const found = await reader.person.getByIds({ contact_ids: ids.slice(0, 200), fields: ['str::email'] });
    // Each result belongs to the person sent at the same position.
    for (const [index, id] of ids.slice(0, 200).entries()) expect(found.contacts[id]?.fields['str::email']).toBe(`chunked${index}@example.com`);
  });
});
