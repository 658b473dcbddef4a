// Erasure at the relay (`POST /admin/erase`) on Node, over real HTTP to the emulator: two relays
// share one SQLite file, as the processes of one deployment do. The erasure drops the person's
// waiting entries and dead letters, suppresses them on both relays (`rejected`, `suppressed`), then
// finds, archives and deletes them on the platform; its audit line names no one.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { createRelayHandlers } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import type { LogLine } from '../../src/relay/core/logging.js';
import { createToken } from '../../src/relay/core/tokens.js';
import type { Outbox, OutboxStore } from '../../src/relay/state/outbox.js';
import { createRedisOutbox } from '../../src/relay/state/redis-outbox.js';
import { type RunningRedis, redisAvailable, startRedis, TEST_COMMAND_TIMEOUT_MS } from '../support/redis.js';
import { createMemoryOutbox } from '../../src/relay/state/memory-outbox.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { item } from './suite/outbox-suite.js';

const KEY = 'erase-platform-key';
const ORIGIN = 'https://shop.example.com';
const SITE = 'pk_erase';

let emulator: RunningEmulator;
const stores: OutboxStore[] = [];
let admin: string;
let reader: string;
let tokens: string;

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, key: KEY });
  const ops = await createToken({ name: 'ops', scopes: ['admin'] });
  const crm = await createToken({ name: 'crm', scopes: ['read', 'write'] });
  [admin, reader] = [ops.token, crm.token];
  tokens = JSON.stringify([ops.entry, crm.entry]);
});
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  await emulator?.close();
});

type Store = 'memory' | 'SQLite' | 'Redis';
let redis: RunningRedis | undefined;
const withRedis = redisAvailable('erasure on Redis (test/relay/erase.test.ts)');
afterAll(async () => {
  await redis?.close();
});

/** Two connections to one new store of `kind` (memory: one object both relays share). */
async function connections(kind: Store): Promise<[Outbox, Outbox]> {
  if (kind === 'memory') {
    const outbox = createMemoryOutbox();
    return [outbox, outbox];
  }
  const path = join(mkdtempSync(join(tmpdir(), 'cdp-erase-')), 'relay-state.db');
  const prefix = `erase${Math.random().toString(36).slice(2)}:`;
  if (kind === 'Redis') redis ??= await startRedis();
  const open = () => (kind === 'SQLite' ? createSqliteOutbox(path) : createRedisOutbox(redis!.url, { prefix, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS }));
  const opened = [await open(), await open()];
  stores.push(...opened);
  return [opened[0]!.outbox, opened[1]!.outbox];
}

/** Two relays on one store, as the processes of a deployment (no deliverer: what waits stays where the test sees it). */
async function deployment(kind: Store = 'SQLite') {
  const config = parseConfig({
    CDP_API_KEY: KEY,
    CDP_BASE_URL: emulator.url,
    RELAY_LOG: 'off',
    RELAY_TOKENS: tokens,
    RELAY_SITES: JSON.stringify([{ key: SITE, origins: [ORIGIN], verify: 'off' }]),
  });
  const lines: LogLine[] = [];
  const outboxes = await connections(kind);
  const relays = outboxes.map((outbox) =>
    createRelayHandlers(config, { outbox, deliver: false, suppressionRefreshMs: 100, logger: (line) => lines.push(line) }),
  );
  return { relays, lines, outbox: outboxes[1] };
}

const collect = async (relay: { app: { request: (path: string, init: RequestInit) => Response | Promise<Response> } }, batch: unknown[]) => {
  const response = await relay.app.request('/collect', {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain' },
    body: JSON.stringify({ key: SITE, batch }),
  });
  return (await response.json()) as { results: { id: string; status: string; reason?: string }[] };
};
const identify = (id: string, fields: Record<string, string>) => ({ id, type: 'identify', ts: new Date().toISOString(), fields });
const track = (id: string, person: Record<string, string>) => ({ id, type: 'track', ts: new Date().toISOString(), activity_id: 'act:cm:page', person });
const erase = (relay: { app: { request: (path: string, init: RequestInit) => Response | Promise<Response> } }, body: unknown, token = admin) =>
  relay.app.request('/admin/erase', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

/** People on the platform with this email. */
async function platformPeople(email: string): Promise<number> {
  const response = await fetch(`${emulator.url}/v1/person/get`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ filter: { '$str::is': { field_id: 'str::email', value: email } }, fields: ['str::email'] }),
  });
  return (((await response.json()) as { contacts: unknown[] | null }).contacts ?? []).length;
}
const deleteCalls = async () =>
  (
    (await (await fetch(`${emulator.url}/_emulator/calls`, { headers: { 'x-api-key': KEY } })).json()) as {
      endpoints: Record<string, { statuses: Record<string, number> }>;
    }
  ).endpoints['person/delete']?.statuses['200'] ?? 0;

describe('POST /admin/erase', () => {
  it.each(['memory', 'SQLite', ...(withRedis ? (['Redis'] as const) : [])] as const)(
    "on %s: drops the person's entries, suppresses them on every relay of the deployment, deletes them on the platform, and logs no one",
    async (kind) => {
      const { relays, lines, outbox } = await deployment(kind);
      const [one, two] = relays as [(typeof relays)[0], (typeof relays)[0]];
      // Ann is on the platform already, and has entries waiting (one a dead letter) beside Bob's.
      await fetch(`${emulator.url}/v1/person/merge`, {
        method: 'POST',
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ merge_by: ['str::email'], people: [{ fields: { 'str::email': 'ann@example.com' } }] }),
      });
      expect(await platformPeople('ann@example.com')).toBe(1);
      const waiting = await collect(one, [
        identify('i-ann', { 'str::email': 'Ann@Example.com' }),
        track('t-ann', { 'str::email': 'ann@example.com' }),
        track('t-bob', { 'str::email': 'bob@example.com' }),
      ]);
      expect(waiting.results.map((result) => result.status)).toEqual(['accepted', 'accepted', 'accepted']);
      // The other relay has read the (empty) suppression list: its copy must be reloaded to see the erasure.
      expect((await collect(two, [track('t-bob2', { 'str::email': 'bob@example.com' })])).results[0]).toMatchObject({ status: 'accepted' });
      // A dead letter of Ann's, from another browser.
      await outbox.accept([item(SITE, 'd-ann', { entry: { activity_id: 'act:cm:page', fields: { 'str::email': 'ann@example.com' } } })], Date.now(), 3600_000);
      const leased = await outbox.lease('deliverer', 10, Date.now(), 60_000);
      const dead = leased.find((entry) => entry.id === 'd-ann')!;
      const released = leased.filter((entry) => entry !== dead).map(({ seq }) => ({ seq, notBefore: 0 }));
      await outbox.settle('deliverer', { delivered: [], released, dead: [{ seq: dead.seq, reason: 'refused' }] }, Date.now());
      const deletesBefore = await deleteCalls();

      const answer = await erase(one, { email: ' ANN@example.com' });
      expect(answer.status).toBe(200);
      const report = (await answer.json()) as Record<string, unknown>;
      expect(report).toMatchObject({
        person: expect.stringMatching(/^[0-9a-f]{12}$/),
        site: null,
        dropped: { waiting: 2, dead_letters: 1 },
        in_flight: 0,
        platform: { status: 'deleted', found: 1, archived: 1, deleted: 1 },
        complete: true,
      });
      expect(Date.parse(report['suppressed_until'] as string) - Date.now()).toBeGreaterThan(29 * 24 * 3600_000);
      expect(await outbox.stats()).toMatchObject({ pending: 2, dead: 0 });
      expect(await platformPeople('ann@example.com')).toBe(0);
      expect(await deleteCalls()).toBe(deletesBefore + 1);

      // Both relays refuse Ann now, by identify or track, in any case; Bob still goes.
      for (const relay of [one, two]) {
        const after = await collect(relay, [
          identify(`again-${Math.random()}`, { 'str::email': 'ann@EXAMPLE.com' }),
          track(`t-${Math.random()}`, { 'str::email': 'ann@example.com' }),
          track(`b-${Math.random()}`, { 'str::email': 'bob@example.com' }),
        ]);
        expect(after.results.map(({ status, reason }) => [status, reason])).toEqual([
          ['rejected', 'suppressed'],
          ['rejected', 'suppressed'],
          ['accepted', undefined],
        ]);
      }
      expect(await outbox.stats()).toMatchObject({ pending: 4 });

      // The audit line: counts and the token's name; no email, not even its hash in full.
      const audit = lines.find((line) => line.kind === 'admin');
      expect(audit).toMatchObject({
        action: 'erase',
        token: 'ops',
        count: 3,
        waiting: 2,
        dead: 1,
        in_flight: 0,
        platform: 'deleted',
        person: report['person'],
      });
      const logged = JSON.stringify(lines);
      expect(logged.toLowerCase()).not.toContain('ann@');
      expect(logged).not.toMatch(/[0-9a-f]{64}/);
    },
  );

  it('erases by external id; leaves entries in flight, and does not delete on the platform until repeated', async () => {
    const { relays, outbox } = await deployment();
    const relay = relays[0]!;
    await collect(relay, [identify('i-ei', { 'str::ei': 'cust-42', 'str::email': 'cust42@example.com' })]);
    await outbox.lease('deliverer', 10, Date.now(), 60_000);
    const deletesBefore = await deleteCalls();
    const report = await (await erase(relay, { external_id: 'cust-42', site: SITE, days: 1 })).json();
    expect(report).toMatchObject({ site: SITE, dropped: { waiting: 0, dead_letters: 0 }, in_flight: 1, platform: { status: 'skipped' }, complete: false });
    expect(await deleteCalls()).toBe(deletesBefore);
    const after = await collect(relay, [track('t-ei', { 'str::ei': 'cust-42' })]);
    expect(after.results[0]).toMatchObject({ status: 'rejected', reason: 'suppressed' });
  });

  it('reports a platform step that failed (the person stays suppressed, their entries dropped), and a failed store as 503 logged with its cause', async () => {
    const { relays, outbox } = await deployment();
    const relay = relays[0]!;
    await collect(relay, [identify('i-fail', { 'str::email': 'fay@example.com' })]);
    const faults = (body: unknown) =>
      fetch(`${emulator.url}/_emulator/faults`, {
        method: 'PUT',
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await faults({ 'person/get': { status: 503, rate: 1 } })).status).toBe(200);
    try {
      const report = await (await erase(relay, { email: 'fay@example.com' })).json();
      expect(report).toMatchObject({ dropped: { waiting: 1 }, platform: { status: 'failed', step: 'person/get', http_status: 503 }, complete: false });
    } finally {
      await faults({});
    }
    expect(await outbox.stats()).toMatchObject({ pending: 0 });
    expect((await collect(relay, [identify('i-fail-2', { 'str::email': 'fay@example.com' })])).results[0]).toMatchObject({ reason: 'suppressed' });

    // A store that fails the suppression: 503, the cause logged, nothing dropped.
    const memory = createMemoryOutbox();
    const failing = { ...memory, suppress: () => Promise.reject(new Error('disk I/O error at /var/lib/relay')) };
    const lines: LogLine[] = [];
    const config = parseConfig({ CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, RELAY_LOG: 'off', RELAY_TOKENS: tokens });
    const handlers = createRelayHandlers(config, { outbox: failing, deliver: false, logger: (line) => lines.push(line) });
    await memory.accept([item('s', 'kept', { entry: { activity_id: 'act:cm:page', fields: { 'str::email': 'fay@example.com' } } })], Date.now(), 3600_000);
    const failed = await erase(handlers, { email: 'fay@example.com' });
    expect(failed.status).toBe(503);
    expect(await failed.json()).toMatchObject({ error: { code: 'relay_unavailable' } });
    expect(lines.find((line) => line.kind === 'error')).toMatchObject({ path: '/admin/erase', cause: { message: expect.stringContaining('disk I/O error') } });
    expect(await memory.stats()).toMatchObject({ pending: 1 });
  });

  it('refuses bad input with the documented error shape and a token without the admin scope, suppressing no one', async () => {
    const { relays } = await deployment();
    const relay = relays[0]!;
    for (const body of [{}, { email: '' }, { email: 'a@b.c', external_id: 'x' }, { email: 5 }, { email: 'a@b.c', days: 0 }, { email: 'a@b.c', extra: 1 }, []]) {
      const response = await erase(relay, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: 'invalid_request', message: expect.not.stringContaining('a@b.c') } });
    }
    const unknown = await erase(relay, { email: 'a@b.c', site: 'no-such-site' });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({ error: { code: 'invalid_request', message: expect.stringContaining('no-such-site') } });
    expect((await erase(relay, { email: 'a@b.c' }, reader)).status).toBe(403);
    expect((await collect(relay, [identify('still', { 'str::email': 'a@b.c' })])).results[0]).toMatchObject({ status: 'accepted' });
  });
});
