/**
 * Diagnose: what the SQLite outbox's accept and delivery cost per item, outside HTTP: CPU per 100
 * items and statements and rows per accept, per lease and per settle, on a real file with the
 * relay's settings (WAL, synchronous=NORMAL, the WAL synced before each answer). Requests of
 * --batch items from --visitors visitors, --concurrent of them at once (one group commit), each
 * 100 accepted then leased, marked sending and settled as the deliverer does. --identifies: each
 * request's first item is an identify of its browser (its tracks wait for it: held, then freed
 * when it is delivered). --window: how long ids are remembered (ms; 1 hour by default): a short
 * one shows a relay that has run longer than its window, each accept forgetting expired ids.
 * `steps` are SQLite's own count of the virtual-machine steps its statements ran (`sqlite_stmt`):
 * the work of the rows they read and wrote, whatever the machine's load. --frames: also the WAL
 * frames (pages) each group of accepts wrote, read from the -wal file's size after a checkpoint
 * that emptied it before the group (the checkpoints change the timings: count, do not time, so),
 * and their bytes; --pages: those frames by the table or index their page is in (`dbstat`). Both
 * move the steps too (read them from a run without either). With either, the settles' frames too,
 * per 100 items delivered (a checkpoint empties the WAL before each settle), and with --pages by B-tree.
 * Ids are v7 UUIDs as the snippet makes them; BENCH_ID_KIND=v4, random ones.
 * --lease: entries a lease asks for (100 by default); --backlog: every request is accepted first,
 * then the outbox drained in leases of --lease, so that a lease finds more visitors ready than it
 * takes (as a deliverer behind a backlog does).
 *
 *   npx tsx bench/diagnose/accept-cost.ts [--requests 3000] [--batch 10] [--concurrent 16] [--visitors 100000] [--identifies] [--window 3600000] [--frames] [--pages] [--lease 100] [--backlog]
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { uuid } from '../../src/browser/uuid.js';
import type { OutboxItem } from '../../src/relay/state/outbox.js';
import { createSqlOutbox } from '../../src/relay/state/sql-outbox.js';
import { libsqlPort } from '../../src/relay/state/sqlite-outbox.js';
import { openSqlite, sqliteCounts } from '../../src/relay/state/sqlite-file.js';
import { walSync } from '../../src/relay/state/sqlite-wal.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '3000' },
    batch: { type: 'string', default: '10' },
    concurrent: { type: 'string', default: '16' },
    visitors: { type: 'string', default: '100000' },
    identifies: { type: 'boolean', default: false },
    window: { type: 'string', default: '3600000' },
    frames: { type: 'boolean', default: false },
    pages: { type: 'boolean', default: false },
    lease: { type: 'string', default: '100' },
    backlog: { type: 'boolean', default: false },
  },
});
const REQUESTS = Number(values.requests);
const BATCH = Number(values.batch);
const CONCURRENT = Number(values.concurrent);
const VISITORS = Number(values.visitors);
const WINDOW = Number(values.window);
const LEASE = Number(values.lease);

const dir = mkdtempSync(join(tmpdir(), 'cdp-accept-cost-'));
// As createSqliteOutbox opens it (WAL, synchronous=NORMAL, the WAL synced before each answer, the connection held open across the syncs), with the connection at hand for its steps.
const path = join(dir, 'relay-state.db');
const db = await openSqlite(path, 5000, 'accept-cost', true);
const wal = walSync(path, { held: true });
const { outbox } = await createSqlOutbox(libsqlPort(db, wal.sync));
const stepsOf = db.prepare('SELECT sum(nstep) FROM sqlite_stmt').raw();
/** A WAL frame's bytes: its page and its 24-byte header. */
const frameBytes = () => Number((db.pragma('page_size') as [{ page_size: number }])[0].page_size) + 24;
/** The frames in the -wal file (each a page and its 24-byte header, after the file's 32-byte header). */
const walFrames = () => {
  const size = statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
  return size <= 32 ? 0 : (size - 32) / frameBytes();
};
/** Every page of the file and the B-tree (table or index) it is in: prepared once, so no statement of it comes and goes from `sqlite_stmt` while steps are counted. */
const dbstat = db.prepare('SELECT pageno, name FROM dbstat').raw();
/** The B-tree each page of the file is in; page 1 is the header's, others the free list's. */
const btreeOf = (): Map<number, string> => new Map((dbstat.all() as [number, string][]).map(([page, name]) => [Number(page), name]));
/** The pages the -wal file's frames hold, by B-tree, added to `into` (each frame's first 4 bytes are its page's number). */
const framesByBtree = (into: Map<string, number>) => {
  const wal = readFileSync(`${path}-wal`);
  const size = frameBytes();
  const btree = btreeOf();
  for (let at = 32; at + size <= wal.length; at += size) {
    const page = wal.readUInt32BE(at);
    const name = page === 1 ? '(header, page 1)' : (btree.get(page) ?? '(free list)');
    into.set(name, (into.get(name) ?? 0) + 1);
  }
};
const acceptPages = new Map<string, number>();
const settlePages = new Map<string, number>();
let settleFrames = 0;
/** VM steps of every statement of the connection so far (they stay prepared). */
const vmSteps = () => Number((stepsOf.get() as unknown[])[0]);
/** Ids as the snippet makes them (time-ordered v7 UUIDs); BENCH_ID_KIND=v4: random ones, as a client of its own may send, which land all over the ids' B-trees. */
const newId = process.env['BENCH_ID_KIND'] === 'v4' ? () => crypto.randomUUID() : uuid;
let visitor = 0;
let serial = 0;
const request = (): OutboxItem[] => {
  const v = `pk_bench:10.0.${visitor++ % VISITORS}`;
  const now = Date.now();
  return Array.from({ length: BATCH }, (_, i): OutboxItem => {
    const who = { site: 'pk_bench', id: newId(), browser: v, visitor: v, accepted: now };
    if (values.identifies && i === 0) return { ...who, kind: 'merge', entry: { identifiers: { email: `u${serial++}@bench.example.com` } } };
    return {
      ...who,
      kind: 'activity',
      entry: {
        activity_id: 'act:cm:bench',
        fields: { 'str::email': `u${serial++}@bench.example.com` },
        attributes: { 'str:cm:plan': 'pro' },
        created: new Date(now).toISOString(),
      },
    };
  });
};

/** Statements, rows, VM steps and commits while started, summed over the spans. */
function statementCounts() {
  const total = { statements: 0, rows: 0, steps: 0, commits: 0 };
  const read = () => ({ ...sqliteCounts, steps: vmSteps() });
  let from = read();
  return {
    start: () => {
      from = read();
    },
    stop: () => {
      const to = read();
      for (const key of ['statements', 'rows', 'steps', 'commits'] as const) total[key] += to[key] - from[key];
    },
    per: (n: number) => Object.fromEntries(Object.entries(total).map(([key, value]) => [key, Math.round((value / n) * 100) / 100])),
  };
}
const counts = { accept: statementCounts(), deliver: statementCounts(), lease: statementCounts() };
let acceptFrames = 0;
const cpu = { accept: 0, deliver: 0 };
let accepted = 0;
let delivered = 0;
let leases = 0;
const started = performance.now();
for (let done = 0; done < REQUESTS; done += CONCURRENT) {
  const batch = Array.from({ length: Math.min(CONCURRENT, REQUESTS - done) }, request);
  if (values.frames || values.pages) db.pragma('wal_checkpoint(TRUNCATE)');
  let before = process.cpuUsage();
  counts.accept.start();
  const answers = await Promise.all(batch.map((items) => outbox.accept(items, Date.now(), WINDOW)));
  counts.accept.stop();
  if (values.frames || values.pages) acceptFrames += walFrames();
  if (values.pages) framesByBtree(acceptPages);
  cpu.accept += (process.cpuUsage(before).user + process.cpuUsage(before).system) / 1000;
  accepted += answers.reduce((n, a) => n + a.accepted.length, 0);
  before = process.cpuUsage();
  counts.deliver.start();
  const last = done + CONCURRENT >= REQUESTS;
  while ((!values.backlog && accepted - delivered >= LEASE) || (last && accepted > delivered)) {
    const now = Date.now();
    counts.lease.start();
    const leased = await outbox.lease('bench', LEASE, now, 30_000);
    counts.lease.stop();
    if (leased.length === 0) break;
    leases++;
    const seqs = await outbox.sending(
      'bench',
      leased.map((entry) => entry.seq),
      now,
    );
    if (values.frames || values.pages) db.pragma('wal_checkpoint(TRUNCATE)');
    await outbox.settle('bench', { delivered: seqs, released: [], dead: [] }, Date.now());
    if (values.frames || values.pages) settleFrames += walFrames();
    if (values.pages) framesByBtree(settlePages);
    delivered += seqs.length;
  }
  counts.deliver.stop();
  cpu.deliver += (process.cpuUsage(before).user + process.cpuUsage(before).system) / 1000;
}
const seconds = (performance.now() - started) / 1000;
const per100 = (ms: number, items: number) => Math.round((ms / (items / 100)) * 100) / 100;
console.log(
  JSON.stringify(
    {
      requests: REQUESTS,
      batch: BATCH,
      concurrent: CONCURRENT,
      lease: LEASE,
      backlog: values.backlog,
      accepted,
      delivered,
      items_per_second: Math.round(accepted / seconds),
      accept_cpu_ms_per_100_items: per100(cpu.accept, accepted),
      deliver_cpu_ms_per_100_items: per100(cpu.deliver, delivered),
      accept_per_request: {
        ...counts.accept.per(REQUESTS),
        ...(values.frames || values.pages
          ? { wal_frames: Math.round((acceptFrames / REQUESTS) * 100) / 100, wal_bytes: Math.round((acceptFrames * frameBytes()) / REQUESTS) }
          : {}),
        ...(values.pages
          ? {
              pages_by_btree: Object.fromEntries(
                [...acceptPages].sort((a, b) => b[1] - a[1]).map(([name, n]) => [name, Math.round((n / REQUESTS) * 100) / 100]),
              ),
            }
          : {}),
      },
      deliver_per_100_items: {
        ...counts.deliver.per(delivered / 100),
        ...(values.frames || values.pages ? { settle_wal_frames: Math.round((settleFrames / (delivered / 100)) * 100) / 100 } : {}),
        ...(values.pages
          ? {
              settle_pages_by_btree: Object.fromEntries(
                [...settlePages].sort((a, b) => b[1] - a[1]).map(([name, n]) => [name, Math.round((n / (delivered / 100)) * 100) / 100]),
              ),
            }
          : {}),
      },
      lease_alone_per_lease: counts.lease.per(leases),
      load_average: loadavg()[0],
    },
    null,
    2,
  ),
);
db.close();
await wal.close();
rmSync(dir, { recursive: true, force: true });
