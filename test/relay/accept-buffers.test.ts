// What the SQLite outbox's accept hands libsql, on a real SQLite file: no buffer of 128 KiB or
// more, however many entries one transaction takes. glibc maps such a buffer on its own (and
// libsql copies it twice more); freeing the mapping raises the process's mmap and trim thresholds
// for good, and every malloc arena then keeps that much more free memory resident
// (src/relay/node/malloc.ts; bench/README.md, "The relay's memory under load").
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'libsql';
import { describe, expect, it } from 'vitest';
import { createSqlOutbox, type SqlPort } from '../../src/relay/state/sql-outbox.js';
import { fromLibsql } from '../../src/relay/state/sqlite-driver.js';
import { sqlitePort } from '../../src/relay/state/sqlite-outbox.js';
import type { SqlValue } from '../../src/relay/state/sql-port.js';
import { item } from './suite/outbox-suite.js';

/** glibc's first mmap threshold: what malloc maps on its own, and what raises the thresholds when freed. */
const MMAP_THRESHOLD = 128 * 1024;

describe('SQLite outbox: an accept binds no buffer glibc would map on its own', () => {
  it('binds buffers under 128 KiB for a transaction of 16 accepts of 100 entries (600 kB of text)', async () => {
    const db = new Sqlite(join(mkdtempSync(join(tmpdir(), 'cdp-accept-buffers-')), 'state.db'));
    db.pragma('journal_mode = WAL');
    const port = sqlitePort(fromLibsql(db));
    // Each bytes parameter's size, and the size of the buffer it lies in (what was allocated).
    const buffers: number[] = [];
    const allocated: number[] = [];
    const seen = (params: SqlValue[]) => {
      for (const param of params) {
        if (!(param instanceof Uint8Array)) continue;
        buffers.push(param.byteLength);
        allocated.push(param.buffer.byteLength);
      }
    };
    const watched: SqlPort = {
      ...port,
      query: (sql, ...params) => {
        seen(params);
        return port.query(sql, ...params);
      },
      run: (sql, ...params) => {
        seen(params);
        return port.run(sql, ...params);
      },
    };
    const { outbox } = await createSqlOutbox(watched);
    const now = Date.now();
    // As the collect bench's batches of 100 at concurrency 16: about 380 characters an entry, every
    // accept made in one turn of the event loop, so one transaction takes them all.
    const text = 'pro'.repeat(110);
    const calls = Array.from({ length: 16 }, (_, c) =>
      outbox.accept(
        Array.from({ length: 100 }, (_, i) =>
          item('s', `r${c}-${i}`, { visitor: `v${c}-${i}`, entry: { activity_id: 'page', fields: { plan: text }, created: '2026-11-25T20:00:00.000Z' } }),
        ),
        now,
        3600_000,
      ),
    );
    const accepted = (await Promise.all(calls)).flatMap((each) => each.accepted);
    expect(accepted).toHaveLength(1600);
    expect(buffers.reduce((sum, size) => sum + size, 0)).toBeGreaterThan(600_000);
    expect(allocated.filter((size) => size >= MMAP_THRESHOLD)).toEqual([]);
    expect(await outbox.stats()).toMatchObject({ pending: 1600 });
    db.close();
  });
});
