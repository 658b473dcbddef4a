// Ids the release before the outbox forwarded (its `items` table) are taken up by the outbox's memory
// of ids when the file is opened, whatever that memory already held for them: a copy of the id whose
// window has ended is replaced by the forwarded one's, so a resend inside that window is a duplicate.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'libsql';
import { afterEach, expect, it } from 'vitest';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { item } from './suite/outbox-suite.js';

const HOUR = 3_600_000;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

it('an id the release before forwarded replaces an ended copy the outbox remembers, and its resend is a duplicate', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-upgrade-ids-'));
  dirs.push(dir);
  const path = join(dir, 'relay-state.db');
  const id = '0190f3a1-7b2c-7d4e-8f60-1a2b3c4d5e6f';
  const now = Date.now();

  // The outbox remembered the id once, for a window that ended an hour ago.
  const first = await createSqliteOutbox(path);
  try {
    expect((await first.outbox.accept([item('pk_a', id)], now - 3 * HOUR, 2 * HOUR)).accepted).toEqual([id]);
  } finally {
    await first.close();
  }
  // The release before forwarded it, and remembers it for another hour.
  const old = new Sqlite(path);
  old.exec(
    'CREATE TABLE items (site TEXT NOT NULL, id TEXT NOT NULL, forwarded INTEGER NOT NULL, until INTEGER NOT NULL, PRIMARY KEY (site, id)) WITHOUT ROWID',
  );
  old.prepare('INSERT INTO items (site, id, forwarded, until) VALUES (?, ?, 1, ?)').run('pk_a', id, now + HOUR);
  old.close();

  const store = await createSqliteOutbox(path);
  try {
    const again = await store.outbox.accept([item('pk_a', id), item('pk_a', 'fresh-id')], now, 2 * HOUR);
    expect(again.duplicate).toEqual([id]);
    expect(again.accepted).toEqual(['fresh-id']);
  } finally {
    await store.close();
  }
});
