// The SQLite outbox commits with synchronous=NORMAL and syncs its WAL off the event loop: no call
// is answered before the sync that followed its commit ended, no transaction begins while a sync
// runs, a failed sync fails its group alone, and the sync follows the -wal file when it is
// replaced; and a browser whose /collect met a failed sync is told to retry (503, the cause logged),
// never `accepted`. On a real file; the sync is watched (or failed) through the outbox's `sync`
// option, which wraps the real fdatasync.
import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxStore } from '../../src/relay/state/outbox.js';
import { openDriver, pragma } from '../../src/relay/state/sqlite-driver.js';
import { sqliteCounts } from '../../src/relay/state/sqlite-file.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { walSync } from '../../src/relay/state/sqlite-wal.js';
import { item } from './suite/outbox-suite.js';

const WINDOW = 3600_000;
const dirs: string[] = [];
const stores: OutboxStore[] = [];
const tempFile = () => {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-walsync-'));
  dirs.push(dir);
  return join(dir, 'state.db');
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const open = async (path: string, sync: (fdatasync: () => Promise<void>) => Promise<void>) => {
  const store = await createSqliteOutbox(path, { sync });
  stores.push(store);
  return store;
};
/** The outbox's rows as another connection to the file reads them (through the outbox's driver): what the commits wrote. */
const rowsInFile = async (path: string) => {
  const db = await openDriver(path, 'the test');
  try {
    return Number(db.prepare('SELECT count(*) FROM outbox').get()?.[0]);
  } finally {
    db.close();
  }
};

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('SQLite outbox: answered only once its commit is synced to the disk', () => {
  it('answers no accept or settle before the WAL sync that followed its commit ended, and begins no transaction while one runs', async () => {
    const path = tempFile();
    const events: string[] = [];
    /** The syncs waiting for the test to let them end, each after the real fdatasync ran. */
    const held: (() => void)[] = [];
    let holding = false;
    const store = await open(path, async (fdatasync) => {
      await fdatasync();
      if (!holding) return;
      events.push('sync');
      await new Promise<void>((resolve) => held.push(resolve));
      events.push('synced');
    });
    const { outbox } = store;
    holding = true;
    const rowsBefore = await rowsInFile(path);
    const first = outbox.accept([item('s', 'a')], Date.now(), WINDOW).then((answer) => events.push(`answered ${answer.accepted}`));
    while (held.length === 0) await sleep(5);
    // The commit is in the file, its sync has begun and not ended: not answered.
    expect(await rowsInFile(path)).toBe(rowsBefore + 1);
    const commits = sqliteCounts.commits;
    const later = [
      outbox.accept([item('s', 'b')], Date.now(), WINDOW).then((answer) => events.push(`answered ${answer.accepted}`)),
      outbox.accept([item('s', 'c')], Date.now(), WINDOW).then((answer) => events.push(`answered ${answer.accepted}`)),
    ];
    await sleep(100);
    expect(events).toEqual(['sync']);
    // Meanwhile nothing began: the later accepts wait for the sync, unwritten.
    expect(sqliteCounts.commits).toBe(commits);
    expect(await rowsInFile(path)).toBe(rowsBefore + 1);
    held.shift()!();
    await first;
    while (held.length === 0) await sleep(5);
    // b and c went in together, in one commit after a's sync, and wait for their own.
    expect(sqliteCounts.commits).toBe(commits + 1);
    expect(await rowsInFile(path)).toBe(rowsBefore + 3);
    await sleep(50);
    expect(events).toEqual(['sync', 'synced', 'answered a', 'sync']);
    held.shift()!();
    await Promise.all(later);
    expect(events).toEqual(['sync', 'synced', 'answered a', 'sync', 'synced', 'answered b', 'answered c']);

    // The delivered entries' settle, the same way.
    holding = false;
    const leased = await outbox.lease('owner', 10, Date.now(), 60_000);
    expect(leased.map((entry) => entry.id).sort()).toEqual(['a', 'b', 'c']);
    holding = true;
    events.length = 0;
    const settled = outbox
      .settle('owner', { delivered: leased.map((entry) => entry.seq), released: [], dead: [] }, Date.now())
      .then(() => events.push('answered settle'));
    while (held.length === 0) await sleep(5);
    expect(await rowsInFile(path)).toBe(rowsBefore);
    await sleep(50);
    expect(events).toEqual(['sync']);
    held.shift()!();
    await settled;
    expect(events).toEqual(['sync', 'synced', 'answered settle']);
  });

  it('answers a group that changed no row without a sync (the empty leases of an idle deliverer), and syncs every group that did', async () => {
    let syncs = 0;
    const store = await open(tempFile(), async (fdatasync) => {
      syncs++;
      await fdatasync();
    });
    const { outbox } = store;
    const before = syncs;
    for (let lease = 0; lease < 5; lease++) expect(await outbox.lease('owner', 10, Date.now(), 60_000)).toEqual([]);
    expect(syncs).toBe(before);
    await outbox.accept([item('s', 'a')], Date.now(), WINDOW);
    expect(syncs).toBe(before + 1);
    const leased = await outbox.lease('owner', 10, Date.now(), 60_000);
    expect(leased.map((entry) => entry.id)).toEqual(['a']);
    expect(syncs).toBe(before + 2);
    // Nothing more to lease while it is out: nothing written, nothing synced.
    expect(await outbox.lease('other', 10, Date.now(), 60_000)).toEqual([]);
    expect(syncs).toBe(before + 2);
    await outbox.settle('owner', { delivered: leased.map((entry) => entry.seq), released: [], dead: [] }, Date.now());
    expect(syncs).toBe(before + 3);
  });

  it('syncs a group that changed no row when another connection committed since its last sync: a duplicate read from another process is on the disk before it is answered', async () => {
    // Two outboxes on one file, as two relay processes (`--workers`) share it.
    const path = tempFile();
    const held: (() => void)[] = [];
    let holding = false;
    const first = await open(path, async (fdatasync) => {
      await fdatasync();
      if (holding) await new Promise<void>((resolve) => held.push(resolve));
    });
    let syncs = 0;
    const second = await open(path, async (fdatasync) => {
      syncs++;
      await fdatasync();
    });
    // Each has synced its own start; an empty lease of the second syncs nothing.
    expect(await second.outbox.lease('owner', 10, Date.now(), 60_000)).toEqual([]);
    holding = true;
    const accepted = first.outbox.accept([item('s', 'a')], Date.now(), WINDOW);
    while (held.length === 0) await sleep(5);
    // a is committed by the first, its sync not ended: the second reads it and changes nothing.
    const before = syncs;
    expect(await second.outbox.accept([item('s', 'a')], Date.now(), WINDOW)).toEqual({ accepted: [], duplicate: ['a'], full: [] });
    // Answered only after a sync of the file, which puts the first's frames on the disk too.
    expect(syncs).toBe(before + 1);
    // Then nothing new from the other: the same resend again syncs nothing.
    expect((await second.outbox.accept([item('s', 'a')], Date.now(), WINDOW)).duplicate).toEqual(['a']);
    expect(syncs).toBe(before + 1);
    held.shift()!();
    expect((await accepted).accepted).toEqual(['a']);
  });

  it('runs in WAL with synchronous=NORMAL and says the WAL is synced before each answer', async () => {
    const store = await open(tempFile(), (fdatasync) => fdatasync());
    expect(store.durability).toBe('WAL, synchronous=NORMAL, WAL synced before each answer');
  });
});

describe('SQLite outbox: a sync that fails', () => {
  it('fails every call of its group with the cause, runs none of them again, and later writes succeed', async () => {
    const path = tempFile();
    let failNext = false;
    let syncs = 0;
    const store = await open(path, async (fdatasync) => {
      syncs++;
      if (failNext) {
        failNext = false;
        throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
      }
      await fdatasync();
    });
    const { outbox } = store;
    failNext = true;
    const syncsBefore = syncs;
    const outcomes = await Promise.allSettled([
      outbox.accept([item('s', 'a')], Date.now(), WINDOW),
      outbox.accept([item('s', 'b')], Date.now(), WINDOW),
      outbox.lease('owner', 10, Date.now(), 60_000),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected']);
    for (const outcome of outcomes) {
      const error = (outcome as PromiseRejectedResult).reason as Error;
      expect(error.name).toBe('CommitSyncError');
      expect(error.message).toMatch(/sync of the WAL to the disk failed: EIO/);
      expect((error.cause as NodeJS.ErrnoException).code).toBe('EIO');
    }
    // One group, one sync: the accepts were not run again one by one (each would have answered duplicate).
    expect(syncs - syncsBefore).toBe(1);
    // Not poisoned: the next writes commit, sync and are answered.
    expect((await outbox.accept([item('s', 'c')], Date.now(), WINDOW)).accepted).toEqual(['c']);
    const leased = await outbox.lease('owner', 10, Date.now(), 60_000);
    expect(leased.map((entry) => entry.id)).toContain('c');
    await outbox.settle('owner', { delivered: leased.map((entry) => entry.seq), released: [], dead: [] }, Date.now());
    // What the failed group wrote stays in the file, as later transactions see it (a and b, under
    // the failed lease until it ends): a sync cannot be undone, so nothing is lost either.
    expect((await outbox.stats()).pending).toBe(2);
    expect((await outbox.accept([item('s', 'a')], Date.now(), WINDOW)).duplicate).toEqual(['a']);
  });

  it('syncs before it answers the resend of an item whose sync failed (read as a duplicate, nothing written): its frames reach the disk first', async () => {
    let failNext = false;
    let syncs = 0;
    const { outbox } = await open(tempFile(), async (fdatasync) => {
      syncs++;
      if (failNext) {
        failNext = false;
        throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
      }
      await fdatasync();
    });
    failNext = true;
    await expect(outbox.accept([item('s', 'x')], Date.now(), WINDOW)).rejects.toThrow(/sync of the WAL/);
    const before = syncs;
    expect((await outbox.accept([item('s', 'x')], Date.now(), WINDOW)).duplicate).toEqual(['x']);
    expect(syncs).toBe(before + 1);
    // Synced well since: the next resend changes nothing and needs no sync.
    expect((await outbox.accept([item('s', 'x')], Date.now(), WINDOW)).duplicate).toEqual(['x']);
    expect(syncs).toBe(before + 1);
  });
});

describe('the WAL sync follows the file', () => {
  /** What this process's descriptors point at, under `dir`. */
  const openUnder = (dir: string) =>
    readdirSync('/proc/self/fd').flatMap((fd) => {
      try {
        const target = readlinkSync(`/proc/self/fd/${fd}`);
        return target.startsWith(dir) ? [target] : [];
      } catch {
        return [];
      }
    });

  // The outbox's sync opens the -wal file once and syncs that descriptor on every commit (held:
  // no stat of the path): sound only while nothing can replace the file under its open connection.
  it('keeps its -wal file, the same inode, while the outbox is open, whatever other connections open, checkpoint and close', async () => {
    const path = tempFile();
    const store = await open(path, (fdatasync) => fdatasync());
    expect((await store.outbox.accept([item('s', 'a')], Date.now(), WINDOW)).accepted).toEqual(['a']);
    const { ino, dev } = statSync(`${path}-wal`);
    for (let round = 0; round < 3; round++) {
      const other = await openDriver(path, 'the test');
      other.exec('CREATE TABLE IF NOT EXISTS other_writer (n INTEGER); INSERT INTO other_writer VALUES (1)');
      pragma(other, 'wal_checkpoint(TRUNCATE)');
      other.close();
      expect(statSync(`${path}-wal`)).toMatchObject({ ino, dev });
      expect((await store.outbox.accept([item('s', `b${round}`)], Date.now(), WINDOW)).accepted).toEqual([`b${round}`]);
    }
    expect(await rowsInFile(path)).toBe(4);
  });

  it.runIf(existsSync('/proc/self/fd'))('opens the -wal file again when it was replaced, and syncs the database file when there is none', async () => {
    const path = tempFile();
    const dir = join(path, '..');
    const wal = walSync(path);
    try {
      writeFileSync(path, 'database');
      // No -wal file (the last connection deleted it after its checkpoint): the database file is synced.
      await wal.sync();
      expect(openUnder(dir)).toEqual([]);
      writeFileSync(`${path}-wal`, 'first log');
      await wal.sync();
      expect(openUnder(dir)).toEqual([`${path}-wal`]);
      // Deleted and made again: the descriptor of the deleted one is closed, the new file synced.
      rmSync(`${path}-wal`);
      writeFileSync(`${path}-wal`, 'second log');
      await wal.sync();
      expect(openUnder(dir)).toEqual([`${path}-wal`]);
    } finally {
      await wal.close();
    }
    expect(openUnder(dir)).toEqual([]);
  });
});

describe('the relay on a disk whose sync fails', () => {
  it('answers /collect 503 in the error shape with the cause logged, and the same items sent again are taken once', async () => {
    const { createRelay } = await import('../../src/relay/app.js');
    const { parseConfig } = await import('../../src/relay/core/config.js');
    let failNext = false;
    const store = await open(tempFile(), async (fdatasync) => {
      if (failNext) {
        failNext = false;
        throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
      }
      await fdatasync();
    });
    const origin = 'https://shop.example.com';
    const config = parseConfig({
      CDP_API_KEY: 'k',
      RELAY_SITES: JSON.stringify([{ key: 'pk_w', origins: [origin], verify: 'open' }]),
    });
    const lines: Record<string, unknown>[] = [];
    const app = createRelay(config, { outbox: store.outbox, deliver: false, logger: (line) => lines.push(line as Record<string, unknown>) });
    const batch = Array.from({ length: 3 }, (_, n) => ({
      id: crypto.randomUUID(),
      type: 'track',
      activity_id: 'act:cm:viewed',
      person: { 'str::email': `w${n}@example.com` },
    }));
    const post = () =>
      app.request('/collect', { method: 'POST', headers: { origin, 'content-type': 'text/plain' }, body: JSON.stringify({ key: 'pk_w', batch }) });
    failNext = true;
    const failed = await post();
    expect(failed.status).toBe(503);
    const body = (await failed.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('relay_unavailable');
    expect(Number(failed.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const logged = lines.find((line) => line['path'] === '/collect' && line['status'] === 503);
    expect(JSON.stringify(logged?.['cause'])).toMatch(/CommitSyncError.*EIO/);
    // The snippet keeps what was not answered accepted and sends it again: the commit was written
    // (a sync cannot be undone), so each item is answered duplicate and waits in the outbox once.
    const again = await post();
    expect(again.status).toBe(200);
    const results = ((await again.json()) as { results: { status: string }[] }).results.map((result) => result.status);
    expect(results).toEqual(['duplicate', 'duplicate', 'duplicate']);
    expect((await store.outbox.stats()).pending).toBe(3);
  });
});
