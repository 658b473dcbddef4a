// The outbox and pacer conformance suite (test/relay/suite/outbox-suite.ts) on every Node store:
// memory, a real SQLite file, a real redis-server.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { createMemoryOutbox, createMemoryPacer } from '../../src/relay/state/memory-outbox.js';
import type { Pacer } from '../../src/relay/state/outbox.js';
import { createRedisOutbox } from '../../src/relay/state/redis-outbox.js';
import type { SqlPort } from '../../src/relay/state/sql-port.js';
import { createSqlOutbox } from '../../src/relay/state/sql-outbox.js';
import { openDriver } from '../../src/relay/state/sqlite-driver.js';
import { openSqlite } from '../../src/relay/state/sqlite-file.js';
import { createSqliteOutbox, sqlitePort } from '../../src/relay/state/sqlite-outbox.js';
import { type RunningRedis, redisAvailable, startRedis, TEST_COMMAND_TIMEOUT_MS } from '../support/redis.js';
import { outboxSuite } from './suite/outbox-suite.js';
import { countingRows } from '../support/sql-rows.js';

outboxSuite('memory', {
  async open() {
    // One store object, shared by every "connection" to it, as the deliverer and the proxy share it in one process.
    const outbox = createMemoryOutbox();
    let shared: Pacer | undefined;
    const handle = {
      outbox,
      reads: async (run: () => Promise<unknown>) => {
        const before = outbox.looked();
        await run();
        return outbox.looked() - before;
      },
      pacer: (rate: number, catchUpMs?: number) => {
        shared ??= createMemoryPacer(rate, catchUpMs);
        return shared;
      },
      async close() {},
    };
    return { ...handle, another: async () => handle };
  },
});

/** `port`, counting the rows its statements answer and change while `reads` runs. */
function counting(port: SqlPort) {
  const counted = countingRows(port);
  const reads = async (run: () => Promise<unknown>) => {
    const before = counted.rows();
    await run();
    return counted.rows() - before;
  };
  return { port: counted.port, reads };
}

const files = new WeakMap<object, string>();
/** The directories of the suite's state files, removed once it ran (a case may hold 200,000 entries). */
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
outboxSuite('SQLite', {
  async open() {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-outbox-'));
    dirs.push(dir);
    const path = join(dir, 'state.db');
    // The file's own connection, its rows counted; another() opens the file as the relay does.
    const db = await openSqlite(path, 5000, 'the outbox suite');
    const { port, reads } = counting(sqlitePort(db));
    const store = await createSqlOutbox(port);
    const handle = { ...store, reads, close: async () => void db.close(), another: () => createSqliteOutbox(path) };
    files.set(handle, path);
    return handle;
  },
  async held(handle) {
    const db = await openDriver(files.get(handle)!, 'the outbox suite');
    try {
      return Number(db.prepare('SELECT count(*) FROM outbox_seen').get()?.[0]);
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
  /** The commands Redis ran while `run` ran, its scripts' included (INFO commandstats; the suite's cases run one at a time). */
  let client: Redis | undefined;
  afterAll(() => client?.disconnect());
  const commands = async (run: () => Promise<unknown>) => {
    client ??= new Redis(redis!.url);
    const stats = client;
    const total = async () =>
      [...(await stats.info('commandstats')).matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)]
        .filter(([, name]) => name !== 'info' && name !== 'config')
        .reduce((sum, [, , calls]) => sum + Number(calls), 0);
    const before = await total();
    await run();
    return (await total()) - before;
  };
  // The suite moves time by hand, so its scripts take the times it passes instead of Redis's TIME
  // (redis-time.test.ts tests that clock with relays whose clocks differ and step).
  outboxSuite('Redis', {
    // A backlog goes in accepts of 2,000: each is one script, which a larger batch would keep
    // running past the client's 2 s command timeout on a loaded machine (and fewer calls saved
    // Redis nothing: 12 s for the 200,000 either way).
    fill: 2_000,
    async open() {
      const prefix = `t${Math.random().toString(36).slice(2)}:`;
      // The suite checks what each script reads and does, never how long it takes: its clients wait
      // 10 s for a command, not the relay's 2 s (an accept, lease or settle of 2,000 outlived 2 s
      // in a whole node project at load 15, with redis-server getting a fraction of a core). The
      // relay's own timeout is tested with Redis away (outbox-stores, store, store-blips).
      const options = { prefix, callerTime: true, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS };
      const handle = { ...(await createRedisOutbox(redis!.url, options)), reads: commands, another: () => createRedisOutbox(redis!.url, options) };
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
