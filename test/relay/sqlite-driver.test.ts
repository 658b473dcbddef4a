// The SQLite driver the relay opens its state file with: Node's own node:sqlite where this Node has
// it, libsql otherwise or when RELAY_SQLITE_DRIVER asks; a file written through one opens through
// the other with nothing lost (a relay upgraded from a release on libsql keeps its outbox).
import { describe, expect, it } from 'vitest';
import { openDriver, SQLITE_DRIVERS, type SqliteDriverName, sqliteDriverChoice } from '../../src/relay/state/sqlite-driver.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { createSqliteStore } from '../../src/relay/state/sqlite.js';
import { hasNodeSqlite } from '../support/node-sqlite.js';
import { tempFiles } from '../support/temp-files.js';
import { item } from './suite/outbox-suite.js';

const tempFile = tempFiles('cdp-driver-');

const nodeSqlite = hasNodeSqlite;
/** The drivers this Node can run. */
const available: SqliteDriverName[] = nodeSqlite ? ['node', 'libsql'] : ['libsql'];
const label = { node: 'node:sqlite', libsql: 'libsql' } as const;

describe('the SQLite driver', () => {
  it('is Node’s own where this Node has it, else libsql; RELAY_SQLITE_DRIVER=libsql keeps libsql', async () => {
    const byDefault = await createSqliteOutbox(tempFile());
    const asked = await createSqliteOutbox(tempFile(), { driver: 'libsql' });
    try {
      expect(byDefault.driver).toBe(nodeSqlite ? 'node:sqlite' : 'libsql');
      expect(asked.driver).toBe('libsql');
    } finally {
      await Promise.all([byDefault.close(), asked.close()]);
    }
  });

  it('RELAY_SQLITE_DRIVER=node opens with Node’s own, or says which Node has it', async () => {
    const opening = openDriver(tempFile(), 'the test', 'node');
    if (nodeSqlite) {
      const db = await opening;
      expect(db.driver).toBe('node:sqlite');
      db.close();
    } else {
      await expect(opening).rejects.toThrow(/RELAY_SQLITE_DRIVER=node: this Node \(v\d+[^)]*\) has no node:sqlite/);
    }
  });

  it('refuses a RELAY_SQLITE_DRIVER it does not know, naming the variable and the choices', () => {
    expect(sqliteDriverChoice({})).toBeUndefined();
    expect(sqliteDriverChoice({ RELAY_SQLITE_DRIVER: ' libsql ' })).toBe('libsql');
    expect(() => sqliteDriverChoice({ RELAY_SQLITE_DRIVER: 'better-sqlite3' })).toThrow(
      `RELAY_SQLITE_DRIVER must be one of ${SQLITE_DRIVERS.join(', ')} (or unset), not "better-sqlite3"`,
    );
  });

  for (const from of available) {
    for (const to of available) {
      it(`a state file written through ${label[from]} opens through ${label[to]}: its entries, ids, lease and counters kept`, async () => {
        const path = tempFile();
        const now = Date.now();
        const before = await createSqliteOutbox(path, { driver: from });
        const state = await createSqliteStore(path, { driver: from });
        try {
          expect((await before.outbox.accept([item('s', 'a'), item('s', 'b'), item('s', 'c')], now, 60_000)).accepted).toEqual(['a', 'b', 'c']);
          expect((await before.outbox.lease('old', 1, now, 60_000)).map((entry) => entry.id)).toEqual(['a']);
          expect(await state.add('s', 'calls', 3, 10)).toBe(3);
        } finally {
          await Promise.all([before.close(), state.close()]);
        }
        const after = await createSqliteOutbox(path, { driver: to });
        const reopened = await createSqliteStore(path, { driver: to });
        try {
          expect(after.driver).toBe(label[to]);
          expect(await after.outbox.stats()).toMatchObject({ pending: 3, remembered: 3 });
          // Its ids are remembered: a resend is a duplicate.
          expect(await after.outbox.accept([item('s', 'b'), item('s', 'd')], now, 60_000)).toEqual({ accepted: ['d'], duplicate: ['b'], full: [] });
          // The old lease still holds 'a'; the rest goes to a new owner, once.
          const leased = await after.outbox.lease('new', 10, now + 1, 60_000);
          expect(leased.map((entry) => entry.id).sort()).toEqual(['b', 'c', 'd']);
          await after.outbox.settle('new', { delivered: leased.map((entry) => entry.seq), released: [], dead: [] }, now + 2);
          expect(await after.outbox.stats()).toMatchObject({ pending: 1 });
          // The counter went on from where it was.
          expect(await reopened.add('s', 'calls', 10, 10)).toBe(7);
        } finally {
          await Promise.all([after.close(), reopened.close()]);
        }
      });
    }
  }
});
