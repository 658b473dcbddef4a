// Accepted stays accepted: the SQLite file fsyncs every commit, a relay refuses a Redis that can
// lose accepted items (unless told otherwise), and an upgrade from the previous release keeps its
// memory of ids, on SQLite and on Redis (state files the previous release wrote, in
// test/fixtures/previous-release, made by its make.ts).
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/relay/core/logging.js';
import { type RunningRelay, startRelay } from '../../src/relay/node.js';
import { defaultSqliteDriver } from '../support/node-sqlite.js';
import { type RunningRedis, redisAvailable, startRedis } from '../support/redis.js';
import { upstreamControl, type UpstreamControl } from './support/control.js';
import { startUpstreamStack, UPSTREAM_KEY, type UpstreamStack } from './support/stack.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'previous-release');
/** The ids the previous release forwarded for site pk_upgrade (make.ts). */
const OLD_IDS = ['0190f3a1-7b2c-7d4e-8f60-1a2b3c4d5e6f', 'order-2031-confirmation'];
const ORIGIN = 'https://shop.example.com';
const hasRedis = redisAvailable('durability on Redis (test/relay/durability.test.ts)');

let stack: UpstreamStack;
let upstream: UpstreamControl;
const cleanup: (() => Promise<unknown> | unknown)[] = [];
const env = () => ({
  CDP_API_KEY: UPSTREAM_KEY,
  CDP_BASE_URL: stack.url,
  RELAY_SITES: JSON.stringify([{ key: 'pk_upgrade', origins: [ORIGIN], verify: 'off' }]),
  RELAY_DELIVERY_WAIT_MS: '0',
});
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-durability-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};
const relayOn = async (options: { stateFile?: string; redisUrl?: string; env?: Record<string, string> }): Promise<RunningRelay> => {
  const relay = await startRelay({ port: 0, logger: silentLogger, ...options, env: { ...env(), ...options.env } });
  cleanup.unshift(() => relay.close());
  return relay;
};
const statuses = async (relay: RunningRelay, ids: string[], email = 'upgrade@example.com') => {
  const batch = ids.map((id) => ({ id, type: 'track', activity_id: 'act:cm:viewed', person: { 'str::email': email } }));
  const response = await fetch(`${relay.url}/collect`, {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain' },
    body: JSON.stringify({ key: 'pk_upgrade', batch }),
  });
  return ((await response.json()) as { results: { status: string }[] }).results.map((result) => result.status);
};
/**
 * The activities the platform took for `email`'s person, in order: the upstream is the file's, and
 * an earlier case's relay may still deliver its own item after a later case reset the upstream.
 */
const delivered = async (email: string) =>
  (await upstream.received())
    .filter((call) => call.path === '/v1/activities/create' && call.status === 200)
    .flatMap((call) => call.body.activities as { fields?: Record<string, unknown> }[])
    .filter((activity) => activity.fields?.['str::email'] === email);

beforeAll(async () => {
  stack = await startUpstreamStack();
  upstream = upstreamControl(stack.url);
});
afterAll(async () => {
  for (const step of cleanup) await step();
  await stack?.close();
});

describe('SQLite: durable on commit', () => {
  it('the relay’s state file runs in WAL with synchronous=NORMAL and the WAL synced before each answer, read back from its connection', async () => {
    const relay = await relayOn({ stateFile: join(tempDir(), 'state.db') });
    expect(relay.state).toMatch(/\(WAL, synchronous=NORMAL, WAL synced before each answer\)$/);
  });

  it('opens its file through the driver its own variables name (RELAY_SQLITE_DRIVER), not the process’s, and refuses one it does not know', async () => {
    const byDefault = await relayOn({ stateFile: join(tempDir(), 'state.db') });
    expect(byDefault.state).toContain(` via ${defaultSqliteDriver} (`);
    const libsql = await relayOn({ stateFile: join(tempDir(), 'state.db'), env: { RELAY_SQLITE_DRIVER: 'libsql' } });
    expect(libsql.state).toContain(' via libsql (');
    expect(await statuses(libsql, [crypto.randomUUID()])).toEqual(['accepted']);
    await expect(relayOn({ stateFile: join(tempDir(), 'state.db'), env: { RELAY_SQLITE_DRIVER: 'sqlite3' } })).rejects.toThrow(
      'RELAY_SQLITE_DRIVER must be one of node, libsql (or unset), not "sqlite3"',
    );
  });
});

/** A resend of the previous release's ids is answered duplicate and never reaches the platform; a new id goes once. */
async function keepsOldIds(relay: RunningRelay) {
  await upstream.reset();
  const fresh = crypto.randomUUID();
  const email = `upgrade-${fresh}@example.com`;
  expect(await statuses(relay, [...OLD_IDS, fresh], email)).toEqual(['duplicate', 'duplicate', 'accepted']);
  await relay.drained({ timeoutMs: 30_000 });
  expect(await delivered(email)).toHaveLength(1);
  expect(await relay.outbox.deadLetters()).toEqual([]);
  // Asked again, the new id is remembered too, and the old ones still are.
  expect(await statuses(relay, [fresh, ...OLD_IDS], email)).toEqual(['duplicate', 'duplicate', 'duplicate']);
}

describe('upgrading from the previous release keeps its memory of ids', () => {
  it('SQLite: a state file the previous release wrote', async () => {
    const stateFile = join(tempDir(), 'relay-state.db');
    copyFileSync(join(FIXTURES, 'relay-state.db'), stateFile);
    await keepsOldIds(await relayOn({ stateFile }));
  }, 60_000);

  it.runIf(hasRedis)(
    'Redis: a dump of the Redis the previous release wrote',
    async () => {
      const redis = await startRedis({ rdb: join(FIXTURES, 'redis-dump.rdb') });
      cleanup.push(() => redis.close());
      await keepsOldIds(await relayOn({ redisUrl: redis.url }));
    },
    60_000,
  );
});

describe.runIf(hasRedis)('a relay on Redis checks its persistence at start', () => {
  let unsafe: RunningRedis;
  beforeAll(async () => {
    unsafe = await startRedis({ persist: false });
    cleanup.push(() => unsafe.close());
  });

  it('refuses to start on a Redis with appendonly no, naming the setting', async () => {
    await expect(relayOn({ redisUrl: unsafe.url })).rejects.toThrow(/appendonly is "no", needs "yes"/);
  });

  it('refuses appendfsync everysec and an evicting policy, naming each', async () => {
    const redis = await startRedis();
    cleanup.push(() => redis.close());
    const client = new Redis(redis.url);
    await client.config('SET', 'appendfsync', 'everysec', 'maxmemory-policy', 'allkeys-lru');
    await client.quit();
    const refusal = relayOn({ redisUrl: redis.url });
    await expect(refusal).rejects.toThrow(/appendfsync is "everysec", needs "always"/);
    await expect(refusal).rejects.toThrow(/maxmemory-policy is "allkeys-lru", needs "noeviction"/);
    await expect(refusal).rejects.not.toThrow(/appendonly is/);
  });

  it('starts anyway with RELAY_REDIS_UNSAFE=on, and takes items', async () => {
    const relay = await relayOn({ redisUrl: unsafe.url, env: { RELAY_REDIS_UNSAFE: 'on' } });
    expect(await statuses(relay, [crypto.randomUUID()])).toEqual(['accepted']);
  });

  it('starts on a Redis with the settings it needs', async () => {
    const redis = await startRedis();
    cleanup.push(() => redis.close());
    const relay = await relayOn({ redisUrl: redis.url });
    expect(relay.state).toMatch(/^Redis /);
  });
});
