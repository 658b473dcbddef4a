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
 * --statements: each statement by its SQL, accepting and delivering apart: runs, SQLite's VM steps
 * (`sqlite_stmt`, whatever the machine's load) and wall time through the port, per 100 items, the
 * most steps first: where the outbox's SQL work goes without a timing patch of the port.
 * Ids are v7 UUIDs as the snippet makes them; BENCH_ID_KIND=v4, random ones.
 * --lease: entries a lease asks for (100 by default); --backlog: every request is accepted first,
 * then the outbox drained in leases of --lease, so that a lease finds more visitors ready than it
 * takes (as a deliverer behind a backlog does).
 *
 *   npx tsx bench/diagnose/accept-cost.ts [--requests 3000] [--batch 10] [--concurrent 16] [--visitors 100000] [--identifies] [--window 3600000] [--frames] [--pages] [--lease 100] [--backlog] [--statements]
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { uuid } from '../../src/browser/uuid.js';
import type { OutboxItem } from '../../src/relay/state/outbox.js';
import { createSqlOutbox, type SqlPort } from '../../src/relay/state/sql-outbox.js';
import { pragma } from '../../src/relay/state/sqlite-driver.js';
import { sqlitePort } from '../../src/relay/state/sqlite-outbox.js';
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
    statements: { type: 'boolean', default: false },
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
// On libsql: its SQLite answers each statement's VM steps (`sqlite_stmt`), Node's own does not.
const db = await openSqlite(path, 5000, 'accept-cost', true, 'libsql');
const wal = walSync(path, { held: true });
const stepsOf = db.prepare('SELECT sum(nstep) FROM sqlite_stmt');
/** --statements: by phase, each statement's runs, VM steps and wall µs (its SQL's whitespace folded). */
type Tally = Map<string, { runs: number; steps: number; us: number }>;
const bySql = { accept: new Map() as Tally, deliver: new Map() as Tally };
/** The phase whose statements are counted: none while the outbox opens. */
let phase: keyof typeof bySql | undefined;
const fold = (sql: string) => sql.replace(/\s+/g, ' ').trim();
const tally = (sql: string) => {
  if (phase === undefined) return { runs: 0, steps: 0, us: 0 };
  const key = fold(sql);
  const known = bySql[phase].get(key);
  if (known !== undefined) return known;
  const one = { runs: 0, steps: 0, us: 0 };
  bySql[phase].set(key, one);
  return one;
};
/** The port with each statement timed and counted (--statements), for the phase running: accept and delivery never overlap here. */
const timedPort = (port: SqlPort): SqlPort => {
  const timed =
    <T>(call: (sql: string, ...params: Parameters<SqlPort['run']>[1][]) => T) =>
    (sql: string, ...params: Parameters<SqlPort['run']>[1][]): T => {
      const from = performance.now();
      const result = call(sql, ...params);
      const one = tally(sql);
      one.runs++;
      one.us += (performance.now() - from) * 1000;
      return result;
    };
  return { ...port, query: timed(port.query), run: timed(port.run) };
};
const stmtSteps = db.prepare('SELECT sql, nstep FROM sqlite_stmt');
/** Each prepared statement's VM steps so far, by its folded SQL. */
const stepsBySql = () => new Map((stmtSteps.all() as [string, number][]).map(([sql, steps]) => [fold(sql), Number(steps)]));
let stepsFrom = new Map<string, number>();
/** The steps each statement ran since the phase began, added to its tally. */
const addSteps = () => {
  for (const [sql, steps] of stepsBySql()) {
    const before = stepsFrom.get(sql) ?? 0;
    if (steps > before && phase !== undefined && bySql[phase].has(sql)) tally(sql).steps += steps - before;
  }
};
const port = sqlitePort(db, wal.sync);
const { outbox } = await createSqlOutbox(values.statements ? timedPort(port) : port);
/** A WAL frame's bytes: its page and its 24-byte header. */
const frameBytes = () => Number(pragma(db, 'page_size')) + 24;
/** The frames in the -wal file (each a page and its 24-byte header, after the file's 32-byte header). */
const walFrames = () => {
  const size = statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
  return size <= 32 ? 0 : (size - 32) / frameBytes();
};
/** Every page of the file and the B-tree (table or index) it is in: prepared once, so no statement of it comes and goes from `sqlite_stmt` while steps are counted. */
const dbstat = db.prepare('SELECT pageno, name FROM dbstat');
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
  if (values.frames || values.pages) pragma(db, 'wal_checkpoint(TRUNCATE)');
  let before = process.cpuUsage();
  phase = 'accept';
  if (values.statements) stepsFrom = stepsBySql();
  counts.accept.start();
  const answers = await Promise.all(batch.map((items) => outbox.accept(items, Date.now(), WINDOW)));
  counts.accept.stop();
  if (values.statements) addSteps();
  if (values.frames || values.pages) acceptFrames += walFrames();
  if (values.pages) framesByBtree(acceptPages);
  cpu.accept += (process.cpuUsage(before).user + process.cpuUsage(before).system) / 1000;
  accepted += answers.reduce((n, a) => n + a.accepted.length, 0);
  before = process.cpuUsage();
  phase = 'deliver';
  if (values.statements) stepsFrom = stepsBySql();
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
    if (values.frames || values.pages) pragma(db, 'wal_checkpoint(TRUNCATE)');
    await outbox.settle('bench', { delivered: seqs, released: [], dead: [] }, Date.now());
    if (values.frames || values.pages) settleFrames += walFrames();
    if (values.pages) framesByBtree(settlePages);
    delivered += seqs.length;
  }
  counts.deliver.stop();
  if (values.statements) addSteps();
  cpu.deliver += (process.cpuUsage(before).user + process.cpuUsage(before).system) / 1000;
}
const seconds = (performance.now() - started) / 1000;
const per100 = (ms: number, items: number) => Math.round((ms / (items / 100)) * 100) / 100;
/** A phase's statements per 100 of its items, the most steps first (SQL cut at 100 characters). */
const statementsOf = (tallied: Tally, items: number) =>
  [...tallied]
    .sort((a, b) => b[1].steps - a[1].steps)
    .map(([sql, { runs, steps, us }]) => ({ sql: sql.slice(0, 100), runs: per100(runs, items), steps: per100(steps, items), us: per100(us, items) }));
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
      ...(values.statements
        ? { statements_per_100_items: { accept: statementsOf(bySql.accept, accepted), deliver: statementsOf(bySql.deliver, delivered) } }
        : {}),
      load_average: loadavg()[0],
    },
    null,
    2,
  ),
);
db.close();
await wal.close();
rmSync(dir, { recursive: true, force: true });
