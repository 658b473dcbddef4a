// The SQL outbox's accepts share a transaction (state/sql-accept.ts): each is answered once the
// transaction that took it is, however late the port answers and whatever accepts came meanwhile.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'libsql';
import { describe, expect, it } from 'vitest';
import { createSqlOutbox, type SqlPort } from '../../src/relay/state/sql-outbox.js';
import { fromLibsql } from '../../src/relay/state/sqlite-driver.js';
import { sqlitePort } from '../../src/relay/state/sqlite-outbox.js';
import { item } from './suite/outbox-suite.js';

const tempFile = () => join(mkdtempSync(join(tmpdir(), 'cdp-late-')), 'state.db');

describe('SQLite: an accept is answered whenever its transaction is', () => {
  it('answers every accept when a port answers its transactions after later accepts have begun the next one', async () => {
    const db = new Sqlite(tempFile());
    db.pragma('journal_mode = WAL');
    const port = sqlitePort(fromLibsql(db));
    // A port may answer a transaction later than the turn that ran it, and begin the next one only
    // then (a sync of the disk between them): the accepts made meanwhile wait and share the next
    // transaction, and each is answered with its own.
    let previous: Promise<unknown> = Promise.resolve();
    const late: SqlPort = {
      ...port,
      transaction: (fn) => {
        const done = previous.then(() => port.transaction(fn)).then((value) => new Promise<typeof value>((resolve) => setTimeout(() => resolve(value), 30)));
        previous = done.catch(() => {});
        return done;
      },
    };
    const { outbox } = await createSqlOutbox(late);
    const now = Date.now();
    const first = outbox.accept([item('s', 'a')], now, 3600_000);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const later = [
      outbox.accept([item('s', 'b')], now, 3600_000),
      outbox.accept([item('s', 'c')], now, 3600_000),
      outbox.accept([item('s', 'd')], now, 3600_000),
    ];
    const unanswered = new Promise<string>((resolve) => setTimeout(() => resolve('not answered within 2 s'), 2000));
    const answers = await Promise.race([Promise.all([first, ...later]), unanswered]);
    expect(answers).not.toBe('not answered within 2 s');
    expect((answers as Awaited<typeof first>[]).map((answer) => answer.accepted)).toEqual([['a'], ['b'], ['c'], ['d']]);
    expect(await outbox.stats()).toMatchObject({ pending: 4 });
    db.close();
  });
});
