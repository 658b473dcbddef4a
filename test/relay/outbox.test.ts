// The outbox and pacer conformance suite (test/relay/suite/outbox-suite.ts) on every Node store:
// memory, a real SQLite file, a real redis-server.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import Sqlite from 'libsql';
import { afterAll, beforeAll } from 'vitest';
import { createMemoryOutbox, createMemoryPacer } from '../../src/relay/state/memory-outbox.js';
import type { Pacer } from '../../src/relay/state/outbox.js';
import { createRedisOutbox } from '../../src/relay/state/redis-outbox.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { type RunningRedis, redisAvailable, startRedis } from '../support/redis.js';
import { outboxSuite } from './suite/outbox-suite.js';

outboxSuite('memory', {
  async open() {
    // One store object, shared by every "connection" to it, as the deliverer and the proxy share it in one process.
    const outbox = createMemoryOutbox();
    let shared: Pacer | undefined;
    const handle = {
      outbox,
      pacer: (rate: number, catchUpMs?: number) => {
        shared ??= createMemoryPacer(rate, catchUpMs);
        return shared;
      },
      async close() {},
    };
    return { ...handle, another: async () => handle };
  },
});

const files = new WeakMap<object, string>();
outboxSuite('SQLite', {
  async open() {
    const path = join(mkdtempSync(join(tmpdir(), 'cdp-outbox-')), 'state.db');
    const handle = { ...(await createSqliteOutbox(path)), another: () => createSqliteOutbox(path) };
    files.set(handle, path);
    return handle;
  },
  async held(handle) {
    const db = new Sqlite(files.get(handle)!);
    try {
      return Number((db.prepare('SELECT count(*) FROM outbox_seen').raw().get() as unknown[])[0]);
    } finally {
      db.close();
    }
  },
});

let redis: RunningRedis | undefined;
if (redisAvailable('the outbox on Redis (test/relay/outbox.test.ts)')) {
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.close();
  });
  const prefixes = new WeakMap<object, string>();
  // The suite moves time by hand, so its scripts take the times it passes instead of Redis's TIME
  // (redis-time.test.ts tests that clock with relays whose clocks differ and step).
  outboxSuite('Redis', {
    async open() {
      const prefix = `t${Math.random().toString(36).slice(2)}:`;
      const options = { prefix, callerTime: true };
      const handle = { ...(await createRedisOutbox(redis!.url, options)), another: () => createRedisOutbox(redis!.url, options) };
      prefixes.set(handle, prefix);
      return handle;
    },
    async held(handle) {
      const client = new Redis(redis!.url);
      try {
        let count = 0;
        let cursor = '0';
        do {
          const [next, keys] = await client.scan(cursor, 'MATCH', `${prefixes.get(handle)}d:*`, 'COUNT', 1000);
          count += keys.length;
          cursor = next;
        } while (cursor !== '0');
        return count;
      } finally {
        client.disconnect();
      }
    },
  });
}
