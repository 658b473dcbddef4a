// How often the SQLite state file is checkpointed: each automatic checkpoint runs inside a commit,
// on the event loop, with two syncs of its own (the WAL before it copies, the database file after)
// and a write of every page it copies. Small commits rewrite the same few pages, so checkpointing
// every 4,000 WAL pages instead of SQLite's 1,000 copies about a third as many pages with a quarter
// of the syncs (bench/README). Counted from the files: the database file grows only when a
// checkpoint copies pages into it; the -wal file holds every frame written since the last one.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { OutboxStore } from '../../src/relay/state/outbox.js';
import { WAL_CHECKPOINT_PAGES } from '../../src/relay/state/sqlite-file.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { item } from './suite/outbox-suite.js';

const WINDOW = 3600_000;
const PAGE = 4096;
/** A WAL frame: its page and a 24-byte header (after the file's 32-byte header). */
const frames = (path: string) => Math.max(0, (statSync(`${path}-wal`).size - 32) / (PAGE + 24));
const dirs: string[] = [];
const stores: OutboxStore[] = [];

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

it('checkpoints the state file after 4,000 WAL pages, not 1,000: single-item accepts fill 1,500 frames with none copied', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-checkpoint-'));
  dirs.push(dir);
  const path = join(dir, 'state.db');
  const store = await createSqliteOutbox(path);
  stores.push(store);
  const size = statSync(path).size;
  // One at a time, as single-item requests that find the disk idle: a commit (about 12 pages) each.
  let n = 0;
  while (frames(path) < 1_500 && statSync(path).size === size) await store.outbox.accept([item('s', `one-${n++}`)], Date.now(), WINDOW);
  // No checkpoint yet: nothing was copied into the database file, every frame is still in the WAL.
  expect(statSync(path).size, `after ${n} accepts, ${frames(path)} frames in the WAL`).toBe(size);
  // Past 4,000 pages a checkpoint runs, copies the pages and the WAL starts again from its beginning.
  const most = { frames: 0 };
  while (statSync(path).size === size) {
    most.frames = Math.max(most.frames, frames(path));
    const batch = Array.from({ length: 50 }, () => item('s', `many-${n++}`));
    await store.outbox.accept(batch, Date.now(), WINDOW);
    expect(n).toBeLessThan(20_000);
  }
  expect(most.frames).toBeGreaterThanOrEqual(WAL_CHECKPOINT_PAGES * 0.9);
  expect(most.frames).toBeLessThan(WAL_CHECKPOINT_PAGES + 500);
}, 60_000);
