// Identify before track for entries stored before the stores indexed merges by browser: a state
// written by this release with the index taken out (the SQLite table and its marker, the Redis
// keys and their flag) is what the release before left. Opening it indexes the waiting merges
// once, so a track accepted back then still waits for its browser's identify.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import Sqlite from 'libsql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Outbox, OutboxItem } from '../../src/relay/state/outbox.js';
import { createRedisOutbox } from '../../src/relay/state/redis-outbox.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { type RunningRedis, redisAvailable, startRedis, TEST_COMMAND_TIMEOUT_MS } from '../support/redis.js';
import { storeItem } from './support/recorded-calls.js';

const DAY = 24 * 3600_000;

/** Browser b identifies then tracks (twice, one merge refused for good); browser c only tracks. */
const items = (): OutboxItem[] => [
  storeItem('pk_u', 'merge', 'b@example.com', 'b'),
  storeItem('pk_u', 'activity', 'b@example.com', 'b'),
  storeItem('pk_u', 'merge-create', 'd@example.com', 'd'),
  storeItem('pk_u', 'activity', 'c@example.com', 'c'),
];

/** Stores `items`, refuses d's merge for good, and leaves the rest waiting. */
async function fill(outbox: Outbox): Promise<void> {
  const now = Date.now();
  expect((await outbox.accept(items(), now, DAY)).accepted).toHaveLength(4);
  const first = await outbox.lease('before#1', 10, now, 60_000);
  const d = first.find((entry) => entry.browser === 'd')!;
  await outbox.settle(
    'before#1',
    { delivered: [], released: first.filter((entry) => entry !== d).map(({ seq }) => ({ seq, notBefore: 0 })), dead: [{ seq: d.seq, reason: 'refused' }] },
    now,
  );
}

/** What the upgraded store leases first: b's merge and c's track, not b's track. */
async function expectHeld(outbox: Outbox): Promise<void> {
  const leased = await outbox.lease('after#1', 10, Date.now(), 60_000);
  expect(leased.map((entry) => `${entry.browser}:${entry.kind}`).sort()).toEqual(['b:merge', 'c:activity']);
  await outbox.settle('after#1', { delivered: leased.map(({ seq }) => seq), released: [], dead: [] }, Date.now());
  expect((await outbox.lease('after#2', 10, Date.now(), 60_000)).map((entry) => `${entry.browser}:${entry.kind}`)).toEqual(['b:activity']);
}

it('an SQLite file: the merges waiting in it hold their browsers’ tracks once it is opened', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'cdp-order-upgrade-')), 'relay-state.db');
  const before = await createSqliteOutbox(path);
  await fill(before.outbox);
  await before.close();
  const db = new Sqlite(path);
  db.exec("DELETE FROM outbox_merges; DELETE FROM outbox_count WHERE name = 'merges'");
  db.close();
  const after = await createSqliteOutbox(path);
  try {
    await expectHeld(after.outbox);
  } finally {
    await after.close();
  }
});

describe.runIf(redisAvailable('the Redis upgrade of the browser index (test/relay/order-upgrade.test.ts)'))('Redis', () => {
  let redis: RunningRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis?.close());

  it('the merges waiting in it hold their browsers’ tracks once a relay connects', async () => {
    const prefix = 'upgrade:';
    const before = await createRedisOutbox(redis.url, { prefix, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS });
    await fill(before.outbox);
    await before.close();
    const raw = new Redis(redis.url);
    try {
      const index = await raw.keys(`${prefix}o:mq:*`);
      expect(index).toHaveLength(1);
      await raw.del(`${prefix}o:mb`, `${prefix}o:ab`, ...index);
      await raw.hdel(`${prefix}o:meta`, 'browsers');
      const after = await createRedisOutbox(redis.url, { prefix, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS });
      try {
        await expectHeld(after.outbox);
        // The refused merge was indexed by browser but does not hold anything: it is not waiting.
        expect(await raw.hget(`${prefix}o:mb`, String((await after.outbox.deadLetters())[0]!.seq))).toMatch(/:d$/);
        expect(await raw.keys(`${prefix}o:mq:*`)).toEqual([]);
      } finally {
        await after.close();
      }
    } finally {
      raw.disconnect();
    }
  });

  it('entries stored before their places (ready, waiting, held) are placed once a relay connects', async () => {
    const prefix = 'places:';
    const before = await createRedisOutbox(redis.url, { prefix, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS });
    await fill(before.outbox);
    await before.close();
    const raw = new Redis(redis.url);
    try {
      // What the release before kept: no ready sets, no held sets, no flag (its o:wait, lanes and merges stay).
      const places = [...(await raw.keys(`${prefix}o:r:*`)), ...(await raw.keys(`${prefix}o:rl:*`)), ...(await raw.keys(`${prefix}o:h:*`))];
      expect(places.length).toBeGreaterThan(0);
      await raw.del(`${prefix}o:rs`, ...places);
      await raw.hdel(`${prefix}o:meta`, 'places');
      const after = await createRedisOutbox(redis.url, { prefix, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS });
      try {
        await expectHeld(after.outbox);
      } finally {
        await after.close();
      }
    } finally {
      raw.disconnect();
    }
  });
});
