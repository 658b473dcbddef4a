/**
 * Diagnose: how many transactions and WAL syncs of the SQLite outbox a platform call costs, with
 * the real deliverer (SQLite outbox in a temporary file as `createSqliteOutbox` opens it, the key's
 * pacer as the relay takes it, the spacer, undici) draining to the built emulator (`cdp-edge
 * emulator --rate-limit <rate> --latency-ms 50`, a child process) while items are accepted at an
 * offered rate in requests of --batch, 7% of them identifies (as pace-timeline.ts). Every
 * transaction is recorded with the steps it carried (accept, lease, the pacer's take and leave,
 * sending, settle, lead), so the tool prints commits and syncs per platform call and per 100
 * items delivered, the deliverer's share, and which steps shared a commit.
 *
 * With --batch 1 --every 1, single-item requests spread in time as pages send them: how many
 * accepts each group commit held, each accept's wait for its commit and sync, this process's CPU
 * per 100 items and (--disk) the WAL frames and syncs the kernel counted.
 *
 *   npm run build && npx tsx bench/diagnose/call-commits.ts [--rate 10] [--offer 300] [--batch 10] [--seconds 10] [--every 10] [--disk]
 *
 * Prints only; writes nothing. Counts, which the machine's load moves less than timings (a slow
 * disk or a busy loop lets more calls share a commit).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { systemClock } from '../../src/relay/core/clock.js';
import { createUpstream, type Upstream } from '../../src/relay/deliver/caller.js';
import { createDeliverer } from '../../src/relay/deliver/deliverer.js';
import { createUndiciTransport } from '../../src/relay/deliver/undici.js';
import type { Outbox, Pacer } from '../../src/relay/state/outbox.js';
import { CATCH_UP_MS } from '../../src/relay/state/pace.js';
import { createSqlOutbox, type SqlPort } from '../../src/relay/state/sql-outbox.js';
import { openSqlite, sqliteCounts } from '../../src/relay/state/sqlite-file.js';
import { sqlitePort } from '../../src/relay/state/sqlite-outbox.js';
import { walSync } from '../../src/relay/state/sqlite-wal.js';
import { countDisk } from '../lib/syscalls.js';
import { startTimelinePlatform, timelineItem } from '../lib/timeline-items.js';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '10' },
    offer: { type: 'string', default: '300' },
    batch: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '10' },
    // ms between the offer's rounds: 10 sends a few requests at once; 1 spreads them as pages send
    every: { type: 'string', default: '10' },
    // the WAL frames and checkpointed pages, counted by the kernel (perf stat, bench/lib/syscalls.ts)
    disk: { type: 'boolean', default: false },
  },
});
const RATE = Number(values.rate);
const OFFER = Number(values.offer);
const BATCH = Number(values.batch);
const SECONDS = Number(values.seconds);
const EVERY = Number(values.every);
const KEY = 'bench-platform-key';
const ACTIVITY = 'bench-view';

/** The step whose method is running now (set around each call of the outbox's and pacer's methods: they open their transaction at once). */
let current = 'other';
/** Per commit (numbered by `sqliteCounts.commits` while it runs), the steps it carried. */
const commits = new Map<number, string[]>();
let syncs = 0;

/** `port` with each transaction's steps recorded in `commits`. */
function recording(port: SqlPort): SqlPort {
  return {
    ...port,
    transaction: (fn) => {
      const step = current;
      return port.transaction(() => {
        const result = fn();
        const name = stepName(step, result);
        const group = commits.get(sqliteCounts.commits) ?? [];
        group.push(name);
        commits.set(sqliteCounts.commits, group);
        return result;
      });
    },
  };
}

/** A step as recorded: a pacer's ask told to wait is marked so; the pacer's one step (Pacer.stepsWith) by what it took. */
function stepName(step: string, result: unknown): string {
  if ((step === 'take' || step === 'leave') && typeof result === 'number' && result !== 0) return `${step}(wait)`;
  if (step !== 'step') return step;
  const { taken, wait, marked } = result as { taken: boolean; wait: number; marked?: number[] };
  return `step(${[taken ? 'take' : '', wait > 0 ? 'wait' : 'leave', marked ? 'sending' : ''].filter(Boolean).join('+')})`;
}

/** `target` with `current` set to the method's name while each of `names` is called. */
function labelled<T extends object>(target: T, names: readonly string[]): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver);
      if (typeof value !== 'function' || !names.includes(String(property))) return value;
      return (...args: unknown[]) => {
        const was = current;
        current = String(property);
        try {
          return value.apply(object, args);
        } finally {
          current = was;
        }
      };
    },
  });
}

const dir = mkdtempSync(join(tmpdir(), 'cdp-call-commits-'));
const emulator = await startTimelinePlatform(KEY, RATE, ACTIVITY);
try {
  // As createSqliteOutbox opens it (WAL, synchronous=NORMAL, the WAL synced before each answer), each sync counted.
  const path = join(dir, 'relay-state.db');
  const db = await openSqlite(path, 5000, 'call-commits', true);
  const wal = walSync(path, { held: true });
  const store = await createSqlOutbox(
    recording(
      sqlitePort(db, () => {
        syncs++;
        return wal.sync();
      }),
    ),
  );
  const outbox = labelled<Outbox>(store.outbox, ['accept', 'lease', 'sending', 'settle', 'lead']);
  const own = store.pacer(RATE, CATCH_UP_MS);
  // The one step is the store's own outbox's only: asked for the outbox itself, then labelled.
  const step = own.stepsWith?.(store.outbox);
  const pacer: Pacer = {
    ...labelled<Pacer>(own, ['take', 'leave', 'hold']),
    stepsWith: () => step && labelled({ step }, ['step']).step,
  };
  let calls = 0;
  const base = createUpstream({
    baseUrl: emulator.url,
    apiKey: KEY,
    transport: createUndiciTransport(),
    timeoutMs: 10_000,
    backoff: { until: 0 },
    now: Date.now,
  });
  const upstream: Upstream = {
    ...base,
    call: (...args) => {
      calls++;
      return base.call(...args);
    },
  };
  let delivered = 0;
  const deliverer = createDeliverer({
    outbox,
    pacer,
    upstream,
    clock: systemClock,
    sites: new Map(),
    ambiguous: 'hold',
    waitMs: 250,
    rate: RATE,
    onTaken: (entries) => {
      delivered += entries.length;
    },
  });
  deliverer.start();
  // libuv's pool threads exist before perf counts this process's threads
  await stat(path);
  const disk = values.disk ? await countDisk(process.pid, path) : undefined;
  const cpuBefore = process.cpuUsage();

  // Items as /collect accepts them (bench/lib/timeline-items.ts): requests of BATCH.
  let made = 0;
  const item = timelineItem(ACTIVITY);
  const accepts: Promise<unknown>[] = [];
  /** each accept's time from its call to its answer (its commit and sync), ms */
  const waits: number[] = [];
  /** accepts answered after each commit (the accepts sql-outbox.ts runs as one call of the port's transaction) */
  const answeredIn = new Map<number, number>();
  const started = performance.now();
  while (performance.now() - started < SECONDS * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * OFFER);
    const now = Date.now();
    for (; made + BATCH <= due; made += BATCH) {
      const batch = Array.from({ length: BATCH }, (_, i) => item(made + i, now));
      const asked = performance.now();
      accepts.push(
        outbox.accept(batch, now, 86_400_000).then(() => {
          waits.push(performance.now() - asked);
          // answered after its group's sync, before any later commit: the count is its commit's
          answeredIn.set(sqliteCounts.commits, (answeredIn.get(sqliteCounts.commits) ?? 0) + 1);
          deliverer.kick(batch.length);
        }),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, EVERY));
  }
  await Promise.all(accepts);
  await deliverer.drained({ timeoutMs: 120_000 });
  const cpu = process.cpuUsage(cpuBefore);
  const counted = await disk?.stop();
  await deliverer.stop();
  db.close();
  await wal.close();

  const groups = [...commits.values()];
  const deliverers = groups.filter((steps) => steps.some((step) => step !== 'accept'));
  const per = (n: number, of: number) => (n / of).toFixed(2);
  console.log(
    `load average ${loadavg()[0]!.toFixed(2)}; ${made} items offered at ${OFFER}/s in requests of ${BATCH} every ${EVERY} ms for ${SECONDS} s, a key of ${RATE} calls/s`,
  );
  waits.sort((a, b) => a - b);
  const at = (q: number) => (waits[Math.min(waits.length - 1, Math.floor(q * waits.length))] ?? 0).toFixed(1);
  const held = [...answeredIn.values()];
  const sizes = [1, 2, 4, 8, 16, Infinity].map((top, i, tops) => {
    const low = i === 0 ? 1 : tops[i - 1]! + 1;
    const n = held.filter((count) => count >= low && count <= top).length;
    return `${low === top ? low : top === Infinity ? `${low}+` : `${low}–${top}`}: ${n}`;
  });
  console.log(
    `accepts ${waits.length} in ${held.length} commits (${per(waits.length, held.length)} a commit; commits holding ${sizes.join(', ')}); accept answered p50 ${at(0.5)} ms, p99 ${at(0.99)} ms`,
  );
  console.log(`this process's CPU per 100 items (the accepts, the deliverer, making the items): ${per((cpu.user + cpu.system) / 1000, made / 100)} ms`);
  if (counted)
    console.log(
      `per 100 items: syncs ${per(counted.fdatasync + counted.fsync, made / 100)}, WAL frames ${per(counted.walWrites / 2, made / 100)} (${per(counted.walWrites / 2, groups.length)} a commit), checkpointed pages ${per(counted.dbWrites, made / 100)} in ${per(counted.dbSyncs, made / 100)} checkpoints`,
    );
  console.log(`platform calls ${calls}, items delivered ${delivered} (${(delivered / calls).toFixed(1)} a call)`);
  console.log(
    `commits ${groups.length} (${per(groups.length, calls)} a call, ${per(groups.length, delivered / 100)} per 100 items), syncs ${syncs} (${per(syncs, calls)} a call)`,
  );
  console.log(
    `  with a step of the deliverer: ${deliverers.length} (${per(deliverers.length, calls)} a call, ${per(deliverers.length, delivered / 100)} per 100 items); accepts alone: ${groups.length - deliverers.length}`,
  );
  const byStep = new Map<string, { in: number; alone: number }>();
  for (const steps of groups)
    for (const step of new Set(steps)) {
      const seen = byStep.get(step) ?? { in: 0, alone: 0 };
      seen.in++;
      if (steps.every((other) => other === step)) seen.alone++;
      byStep.set(step, seen);
    }
  console.log('commits carrying each step (a call of it per commit, or more when they coincided):');
  for (const [step, seen] of [...byStep].sort(([, a], [, b]) => b.in - a.in))
    console.log(`  ${step.padEnd(12)} in ${String(seen.in).padStart(5)} (${per(seen.in, calls)} a call), alone in ${String(seen.alone).padStart(5)}`);
  const mixes = new Map<string, number>();
  for (const steps of deliverers) {
    const key = [...new Set(steps)].sort().join('+');
    mixes.set(key, (mixes.get(key) ?? 0) + 1);
  }
  console.log('the deliverer’s commits by the steps they carried:');
  for (const [mix, n] of [...mixes].sort(([, a], [, b]) => b - a).slice(0, 15)) console.log(`  ${String(n).padStart(5)}  ${mix}`);
} finally {
  await emulator.stop();
  rmSync(dir, { recursive: true, force: true });
}
