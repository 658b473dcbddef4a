import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startEmulator } from '../../src/emulator/index.js';

const KEY = 'persist-key';
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cdp-edge-emulator-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const clientOf = (url: string) => createClient({ apiKey: KEY, baseUrl: url, retry: false });

describe('--data persistence', () => {
  it('keeps people, tags, fields, definitions and links across a restart, with merges still finding people', async () => {
    const data = join(dir, 'state.json');
    const first = await startEmulator({ port: 0, key: KEY, data, writeDebounceMs: 10 });
    const client = clientOf(first.url);
    await client.person.createCustomField({ type: 'text', name: 'Plan' });
    await client.definitions.createActivity({ name: 'Signed up' });
    const [ann] = (await client.person.merge({ people: [{ fields: { 'str::email': 'ann@example.com', 'str:cm:plan': 'pro' }, tags: ['vip'] }] })).people!;
    const acc = (await client.accounts.merge({ merge_by: ['str:o:name'], accounts: [{ fields: { 'str:o:name': 'Acme' } }] })).accounts![0]!.account_id!;
    await client.accounts.addContacts({ accounts_id: acc, inclusion_ids: [ann!.person_id!] });
    await client.activities.create({ activities: [{ activity_id: 'act:cm:signed-up', fields: { 'str::email': 'ann@example.com' } }] });
    await first.close();
    expect(readdirSync(dir)).toEqual(['state.json']);
    const saved = JSON.parse(readFileSync(data, 'utf8'));
    expect(saved.people[0]).toMatchObject({ id: ann!.person_id, tags: ['vip'], account_id: acc });

    const second = await startEmulator({ port: 0, key: KEY, data });
    try {
      const again = clientOf(second.url);
      const page = await again.person.get({ fields: ['str::email', 'str:cm:plan', 'tags'] });
      expect(page.contacts).toEqual([{ id: ann!.person_id, fields: { 'str::email': 'ann@example.com', 'str:cm:plan': 'pro', tags: ['vip'] } }]);
      expect((await again.person.merge({ people: [{ fields: { 'str::email': 'ANN@example.com' } }] })).people![0]).toEqual({
        person_id: ann!.person_id,
        status: 'merged',
      });
      expect((await again.definitions.modifyActivity({ activity_field_id: 'act:cm:signed-up' })).custom_activity.state).toBe('live');
      expect(second.emulator.state.accounts.get(acc)!.members.has(ann!.person_id!)).toBe(true);
      expect(second.emulator.state.people.get(ann!.person_id!)!.events).toHaveLength(1);
    } finally {
      await second.close();
    }
  });

  it('loads a hand-written seed: people without IDs, tag names, audiences with members, a suppression list', async () => {
    const data = join(dir, 'seed.json');
    writeFileSync(
      data,
      JSON.stringify({
        people: [{ fields: { 'str::email': 'member@example.com' }, tags: ['seeded'] }],
        audiences: [{ id: 'aud-9', name: 'Seeded', members: [{ email: 'member@example.com', subscribed: true }] }],
        suppression_list: ['no@example.com'],
      }),
    );
    const running = await startEmulator({ port: 0, key: KEY, data });
    try {
      const client = clientOf(running.url);
      const members = await client.person.get({ audience_id: 'aud-9', fields: ['str::email', 'tags'] });
      expect(members.contacts![0]!.fields).toEqual({ 'str::email': 'member@example.com', tags: ['seeded'] });
      expect(members.contacts![0]!.id).toMatch(/^00[0-9a-f]{22}$/);
      const suppressed = await client.person.merge({
        suppression_list_field_id: 'str::email',
        people: [{ fields: { 'str::email': 'no@example.com' } }, { fields: { 'str::email': 'yes@example.com' } }],
      });
      expect(suppressed.people!.map((p) => p.status)).toEqual(['suppressed', 'created']);
    } finally {
      await running.close();
    }
  });

  it('refuses a data file that is not JSON, naming it, and leaves it untouched', async () => {
    const data = join(dir, 'broken.json');
    writeFileSync(data, '{"people": [');
    await expect(startEmulator({ port: 0, key: KEY, data })).rejects.toThrow(/broken\.json is not valid JSON/);
    expect(readFileSync(data, 'utf8')).toBe('{"people": [');
  });

  it('without --data, state lives in memory only', async () => {
    const running = await startEmulator({ port: 0, key: KEY });
    await clientOf(running.url).person.merge({ people: [{ fields: { 'str::email': 'mem@example.com' } }] });
    await running.close();
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('the data file writer', () => {
  it('reports a failed write, keeps the change pending, and writes again once the cause is gone', async () => {
    const { createDataWriter } = await import('../../src/emulator/persist.js');
    const { mkdirSync } = await import('node:fs');
    const folder = join(dir, 'not-yet');
    const path = join(folder, 'state.json');
    let version = 1;
    const writer = createDataWriter(path, () => ({ version }) as never, 5);
    writer.schedule();
    await expect(writer.flush()).rejects.toThrow(/could not write .*state\.json: ENOENT/);
    mkdirSync(folder);
    version = 2;
    // No new change: the failed one is still pending and goes with the next flush.
    await writer.flush();
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ version: 2 });
    version = 3;
    writer.schedule();
    await writer.flush();
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ version: 3 });
    expect(readdirSync(folder)).toEqual(['state.json']);
  });
});
