// `cdp-edge outbox list|retry|drop` on a real SQLite state file and a real redis-server, as an
// operator runs it: what it prints, what it changes in the outbox, and how it refuses bad input.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRedisOutbox } from '../../src/relay/state/redis-outbox.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { redisAvailable, startRedis, TEST_COMMAND_TIMEOUT_MS } from '../support/redis.js';
import { item } from '../relay/suite/outbox-suite.js';
import { cli, seed } from './outbox-support.js';

afterEach(() => {
  delete process.env['RELAY_STATE_FILE'];
  delete process.env['RELAY_REDIS_URL'];
});

describe('cdp-edge outbox on the SQLite state file', () => {
  const file = () => join(mkdtempSync(join(tmpdir(), 'cdp-cli-outbox-')), 'relay-state.db');

  it('lists the dead letters oldest first, as a table or JSON, by site', async () => {
    const path = file();
    const store = await createSqliteOutbox(path);
    const [a1, b1, a2] = await seed(store);
    await store.close();
    process.env['RELAY_STATE_FILE'] = path;
    const listed = await cli('list');
    expect(listed.code).toBe(0);
    const lines = listed.out.split('\n').map((line) => line.split(/\s+/));
    expect(lines).toEqual([
      ['SEQ', 'SITE', 'ID', 'KIND', 'REASON', 'STATUS', 'AGE'],
      [String(a1), 'shop', 'a1', 'activity', 'invalid_field', '400', '2h'],
      [String(b1), 'blog', 'b1', 'merge', 'ambiguous', '504', '2h'],
      [String(a2), 'shop', 'a2', 'activity', 'unknown_activity', '422', '2h'],
    ]);
    const json = await cli('list', '--json', '--site', 'shop', '--state-file', path);
    expect(JSON.parse(json.out)).toMatchObject([
      { seq: a1, site: 'shop', id: 'a1', reason: 'invalid_field', status: 400, entry: item('shop', 'a1').entry },
      { seq: a2, site: 'shop', id: 'a2', reason: 'unknown_activity', status: 422 },
    ]);
    expect(JSON.parse((await cli('list', '--json', '--limit', '1')).out)).toHaveLength(1);
  });

  it('retries and drops by seq or all, printing how many, and the outbox follows', async () => {
    const path = file();
    const seeded = await createSqliteOutbox(path);
    const [a1, b1, a2] = await seed(seeded);
    await seeded.close();
    expect(await cli('retry', String(a1), '999', '--state-file', path)).toMatchObject({ code: 0, out: 'retried 1 dead letter (1 not found)' });
    expect(await cli('drop', String(b1), '--state-file', path)).toMatchObject({ code: 0, out: 'dropped 1 dead letter' });
    const store = await createSqliteOutbox(path);
    expect((await store.outbox.deadLetters()).map((letter) => letter.seq)).toEqual([a2]);
    // The retried letter is back in the outbox, ready for the deliverer with attempts 0.
    expect((await store.outbox.lease('deliverer', 10, Date.now() + 120_000, 60_000)).map((entry) => [entry.id, entry.attempts])).toEqual([
      ['a1', 0],
      ['live', 0],
    ]);
    await store.close();
    expect(await cli('drop', '--all', '--state-file', path)).toMatchObject({ code: 0, out: 'dropped 1 dead letter' });
    expect(await cli('list', '--state-file', path)).toMatchObject({ code: 0, out: 'no dead letters' });
  });

  it('refuses bad input with a clear message and a nonzero exit, changing nothing', async () => {
    const path = file();
    const seeded = await createSqliteOutbox(path);
    await seed(seeded);
    await seeded.close();
    const cases: [string[], RegExp][] = [
      [['frobnicate'], /expected list, retry or drop; got "frobnicate"/],
      [[], /expected list, retry or drop; got ""/],
      [['retry'], /name the dead letters by seq/],
      [['drop', 'abc'], /"abc" is not a seq/],
      [['drop', '1.5'], /"1.5" is not a seq/],
      [['retry', '1', '--all'], /seqs or --all, not both/],
      [['list', '3'], /takes no seqs/],
      [['list', '--limit', 'ten'], /--limit must be a whole number/],
      [['list', '--colour'], /Unknown option '--colour'/],
      [['list', '--state-file', ':memory:'], /in-memory relay/],
    ];
    for (const [argv, message] of cases) {
      const run = await cli(...(argv.includes('--state-file') ? argv : [...argv, '--state-file', path]));
      expect(run.code, argv.join(' ')).toBe(2);
      expect(run.err, argv.join(' ')).toMatch(message);
    }
    const missing = join(tmpdir(), `no-such-dir-${Date.now()}`, 'state.db');
    const run = await cli('list', '--state-file', missing);
    expect(run).toMatchObject({ code: 1, err: expect.stringContaining(`no relay state file at ${missing}`) });
    expect(existsSync(missing)).toBe(false);
    const store = await createSqliteOutbox(path);
    expect(await store.outbox.stats()).toMatchObject({ pending: 1, dead: 3 });
    await store.close();
  });
});

describe.runIf(redisAvailable('cdp-edge outbox on Redis (test/cli/outbox.test.ts)'))('cdp-edge outbox on Redis', () => {
  it('reads RELAY_REDIS_URL (or --redis-url) and acts on the shared outbox; an unreachable Redis exits 1 naming it', async () => {
    const redis = await startRedis();
    try {
      const store = await createRedisOutbox(redis.url, { commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS });
      const [a1, b1, a2] = await seed(store);
      process.env['RELAY_REDIS_URL'] = redis.url;
      process.env['RELAY_STATE_FILE'] = '/nonexistent/state.db';
      expect(
        (await cli('list')).out
          .split('\n')
          .slice(1)
          .map((line) => line.split(/\s+/)[0]),
      ).toEqual([String(a1), String(b1), String(a2)]);
      expect(await cli('retry', '--all')).toMatchObject({ code: 0, out: 'retried 3 dead letters' });
      expect(await store.outbox.stats()).toMatchObject({ pending: 4, dead: 0 });
      await store.close();
      delete process.env['RELAY_REDIS_URL'];
      expect(await cli('list', '--redis-url', redis.url)).toMatchObject({ code: 0, out: 'no dead letters' });
      expect(await cli('list', '--redis-url', 'http://localhost:1')).toMatchObject({ code: 1, err: expect.stringMatching(/must start with redis:\/\//) });
    } finally {
      await redis.close();
    }
    const gone = await cli('list', '--redis-url', redis.url);
    expect(gone).toMatchObject({ code: 1, err: expect.stringContaining(`could not connect to 127.0.0.1:${redis.port}`) });
  }, 30_000);
});
