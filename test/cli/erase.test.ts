// `cdp-edge erase --email X --relay URL` against a running Node relay over real HTTP (its admin
// endpoint, its SQLite outbox) and the emulator: the person's waiting item goes, their items are
// refused afterwards, the platform deletes them; bad input is refused before anything is sent.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { createToken } from '../../src/relay/core/tokens.js';
import { type RunningRelay, startRelay } from '../../src/relay/node.js';
import { command } from './outbox-support.js';

const KEY = 'cli-erase-key';
const ORIGIN = 'https://shop.example.com';
let emulator: RunningEmulator;
let relay: RunningRelay;
let admin: string;

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, key: KEY });
  const ops = await createToken({ name: 'ops', scopes: ['admin'] });
  admin = ops.token;
  relay = await startRelay({
    port: 0,
    stateFile: join(mkdtempSync(join(tmpdir(), 'cdp-cli-erase-')), 'relay-state.db'),
    deliver: false,
    env: {
      CDP_API_KEY: KEY,
      CDP_BASE_URL: emulator.url,
      RELAY_LOG: 'off',
      RELAY_TOKENS: JSON.stringify([ops.entry]),
      RELAY_SITES: JSON.stringify([{ key: 'pk_cli_erase', origins: [ORIGIN], verify: 'off' }]),
    },
  });
});
afterAll(async () => {
  await relay?.close();
  await emulator?.close();
});

const cli = (...argv: string[]) => command('erase', ...argv);

const send = async (id: string, email: string) => {
  const response = await fetch(`${relay.url}/collect`, {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain' },
    body: JSON.stringify({ key: 'pk_cli_erase', batch: [{ id, type: 'identify', ts: new Date().toISOString(), fields: { 'str::email': email } }] }),
  });
  return ((await response.json()) as { results: { status: string; reason?: string }[] }).results[0];
};

describe('cdp-edge erase --relay URL', () => {
  it('erases a person at the relay and on the platform, and prints what it did', async () => {
    await fetch(`${emulator.url}/v1/person/merge`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ merge_by: ['str::email'], people: [{ fields: { 'str::email': 'eve@example.com' } }] }),
    });
    expect(await send('e1', 'eve@example.com')).toMatchObject({ status: 'accepted' });
    expect(await relay.outbox.stats()).toMatchObject({ pending: 1 });
    const erased = await cli('--email', 'Eve@Example.com', '--relay', relay.url, '--token', admin);
    expect(erased.code, erased.err).toBe(0);
    expect(erased.out).toMatch(/^erased person [0-9a-f]{12} \(every site\)\n {2}dropped: {4}1 waiting entry, 0 dead letters\n {2}suppressed: until \d{4}-/);
    expect(erased.out).toMatch(/platform: {3}found 1, archived 1, deleted 1$/);
    expect(erased.out).not.toContain('eve@');
    expect(await relay.outbox.stats()).toMatchObject({ pending: 0 });
    expect(await send('e2', 'eve@example.com')).toMatchObject({ status: 'rejected', reason: 'suppressed' });
    // Again, as JSON: nothing left to drop, nobody left on the platform.
    const again = await cli('--email', 'eve@example.com', '--relay', relay.url, '--token', admin, '--json');
    expect(JSON.parse(again.out)).toMatchObject({ dropped: { waiting: 0, dead_letters: 0 }, platform: { status: 'deleted', found: 0 }, complete: true });
  });

  it('exits 1 when the platform was not asked (entries in flight), saying to run it again', async () => {
    expect(await send('f1', 'ivy@example.com')).toMatchObject({ status: 'accepted' });
    await relay.outbox.lease('a-deliverer', 10, Date.now(), 60_000);
    const run = await cli('--email', 'ivy@example.com', '--relay', relay.url, '--token', admin);
    expect(run.code).toBe(1);
    expect(run.out).toMatch(/in flight: {2}1 entry held by a deliverer for a call\n {2}platform: {3}not asked: .*repeat the erasure/);
  });

  it('refuses bad input before anything is sent, with the usage', async () => {
    const before = await relay.outbox.stats();
    for (const [argv, message] of [
      [['--relay', relay.url, '--token', admin], /--email or by --external-id/],
      [['--email', 'a@b.c', '--external-id', 'x', '--relay', relay.url, '--token', admin], /one of them/],
      [['--email', '  ', '--relay', relay.url, '--token', admin], /--email is empty/],
      [['--email', 'a@b.c', '--days', '0', '--relay', relay.url, '--token', admin], /--days must be a whole number/],
      [['--email', 'a@b.c', '--token', admin], /--relay URL is required/],
      [['--email', 'a@b.c', '--relay', 'ftp://x', '--token', admin], /http\(s\) address/],
      [['--email', 'a@b.c', '--relay', relay.url], /admin scope/],
      [['--emial', 'a@b.c'], /Unknown option/],
    ] as const) {
      const run = await cli(...argv);
      expect(run.code, argv.join(' ')).toBe(2);
      expect(run.err).toMatch(message);
      expect(run.err).toContain('Usage: cdp-edge erase');
    }
    const wrong = await cli('--email', 'a@b.c', '--relay', relay.url, '--token', 'rt_not-a-token');
    expect(wrong).toMatchObject({ code: 1, err: expect.stringMatching(/answered 401 \(invalid_token/) });
    expect(await relay.outbox.stats()).toEqual(before);
    expect(await send('a1', 'a@b.c')).toMatchObject({ status: 'accepted' });
  });
});
