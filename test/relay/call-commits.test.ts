// What a platform call costs the SQLite state file while calls are sparse (below the key's rate,
// where no two steps of the deliverer fall in one group commit): its transactions and WAL syncs.
// Asked apart, a call took five: its lease (one call a lease here), the pacer's slot, its place in
// the shared window, the `sending` mark and the settle. The pacer's two and the mark now go in one
// (Pacer.stepsWith): three. The real deliverer, the SQLite outbox on a file with its WAL synced
// before each answer, the emulator over HTTP.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { systemClock } from '../../src/relay/core/clock.js';
import { createUpstream } from '../../src/relay/deliver/caller.js';
import { createDeliverer } from '../../src/relay/deliver/deliverer.js';
import { createUndiciTransport } from '../../src/relay/deliver/undici.js';
import { CATCH_UP_MS } from '../../src/relay/state/pace.js';
import { sqliteCounts } from '../../src/relay/state/sqlite-file.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { backlog, DAY, emulator, eventsOf, KEY, useDeliveryKit } from './support/delivery-kit.js';

useDeliveryKit();

const ROUNDS = 8;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The platform's caller as the relay makes it, on the undici transport. */
const upstreamAt = (baseUrl: string) =>
  createUpstream({ baseUrl, apiKey: KEY, transport: createUndiciTransport(), timeoutMs: 10_000, backoff: { until: 0 }, now: Date.now });

it('marks and paces a call in one commit: three commits and syncs of the deliverer a platform call (the median of 8), every item once', async () => {
  const platform = emulator;
  let syncs = 0;
  const dir = mkdtempSync(join(tmpdir(), 'cdp-call-commits-'));
  const store = await createSqliteOutbox(join(dir, 'relay-state.db'), {
    sync: (fdatasync) => {
      syncs++;
      return fdatasync();
    },
  });
  let calls = 0;
  const upstream = upstreamAt(platform.url);
  const counted = {
    ...upstream,
    call: (...args: Parameters<typeof upstream.call>) => {
      calls++;
      return upstream.call(...args);
    },
  };
  let delivered = 0;
  let settled = { commits: 0, syncs: 0 };
  /** times the deliverer counted a call's place again for leaving late (Left.lateAsks), since the round began */
  let lateAsks = 0;
  const deliverer = createDeliverer({
    outbox: store.outbox,
    // As the relay takes it (state/node.ts).
    pacer: store.pacer(10, CATCH_UP_MS),
    upstream: counted,
    clock: systemClock,
    sites: new Map(),
    ambiguous: 'hold',
    // A lease that finds nothing naps until a full call's worth is kicked, never for a time: an empty
    // lease is a transaction too, and on a loaded machine (a fresh-clone CI run at load 10: 3.625 a
    // call) a timed one fell between a round's first count and its settle.
    waitMs: 60_000,
    rate: 10,
    // A lock that needs no renewal while the test runs: its writes are a second's, not a call's.
    leadTtlMs: 60_000,
    onDelivery: (event) => {
      lateAsks += event.lateAsks ?? 0;
    },
    onTaken: (entries) => {
      delivered += entries.length;
      // What the call cost is read at its settle: a wait for the next items after it is not the call's.
      settled = { commits: sqliteCounts.commits, syncs };
    },
  });
  /** Each counted round's commits and syncs, less its accept's. */
  const rounds: { commits: number; syncs: number; late: number }[] = [];
  const items = [];
  try {
    deliverer.start();
    // The first round takes the lead lock too: not counted.
    for (let round = -1; round < ROUNDS; round++) {
      // A call's worth at a time, each delivered before the next is accepted: one call a lease, nothing beside it.
      // Sparse: the last call left at least 1.5 spacings ago, so the spacer never holds this one (a
      // held call's mark is a commit of its own when it leaves: 3.375–3.625 a call at load 7–10).
      await new Promise((resolve) => setTimeout(resolve, 150));
      const batch = backlog('pk_d', `commits-${round}`, 100, Date.now());
      items.push(...batch);
      const from = { commits: sqliteCounts.commits, syncs, delivered };
      lateAsks = 0;
      expect((await store.outbox.accept(batch, Date.now(), DAY)).accepted).toHaveLength(100);
      deliverer.kick(100);
      await expect.poll(() => delivered - from.delivered, { timeout: 10_000 }).toBe(100);
      if (round < 0) continue;
      // Less the accept's own commit.
      rounds.push({ commits: settled.commits - from.commits - 1, syncs: settled.syncs - from.syncs - 1, late: lateAsks });
    }
    await deliverer.drained();
  } finally {
    await deliverer.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const said = `commits and syncs of each call (its late asks): ${rounds.map((round) => `${round.commits}/${round.syncs} (${round.late})`).join(', ')}`;
  expect(calls, said).toBe(ROUNDS + 1);
  // A call that leaves more than the window's margin after its place was counted (its step's own
  // commit and sync slow on a loaded machine) has its place counted again, a commit of the pacer's
  // each time (slots.ts, `lateAsks`, twice at most): what the load adds, counted per round and left
  // out (at load 16 the rounds cost 3, 3, 5, 3, 4, 4, 5, 3, the 4s and 5s each its late asks). What
  // a call costs is its usual round's, the median, of the rest; a call that cost 4 by design would
  // in every round.
  expect(median(rounds.map((round) => round.commits - round.late)), said).toBeLessThanOrEqual(3);
  expect(median(rounds.map((round) => round.syncs - round.late)), said).toBeLessThanOrEqual(3);
  // Every item once.
  const people = [...platform.emulator.state.people.values()];
  expect(people.flatMap((person) => person.events)).toHaveLength(items.length);
}, 60_000);

it('marks a call its spacer holds a moment in its pacer step too: none asked apart, every item once', async () => {
  const platform = emulator;
  const dir = mkdtempSync(join(tmpdir(), 'cdp-call-commits-'));
  const store = await createSqliteOutbox(join(dir, 'relay-state.db'));
  // The marks asked apart (Outbox.sending), counted on the store's own outbox: a wrapper would not be the outbox the pacer's step is for.
  let apart = 0;
  const sending = store.outbox.sending;
  store.outbox.sending = (...args) => {
    apart++;
    return sending(...args);
  };
  const upstream = upstreamAt(platform.url);
  let calls = 0;
  let delivered = 0;
  let lateAsks = 0;
  const deliverer = createDeliverer({
    outbox: store.outbox,
    // 100 calls a second: a lease's calls leave 5 ms apart at least (the spacer's gap, spacer.ts), each
    // held by its spacer a few ms after the one before it: within the longest a mark may begin before a call goes.
    pacer: store.pacer(100, CATCH_UP_MS),
    upstream,
    clock: systemClock,
    sites: new Map(),
    ambiguous: 'hold',
    waitMs: 60_000,
    rate: 100,
    leadTtlMs: 60_000,
    onDelivery: (event) => {
      if (event.called) calls++;
      lateAsks += event.lateAsks ?? 0;
    },
    onTaken: (entries) => {
      delivered += entries.length;
    },
  });
  const items = backlog('pk_d', 'held', 1_000, Date.now());
  const from = sqliteCounts.commits;
  try {
    expect((await store.outbox.accept(items, Date.now(), DAY)).accepted).toHaveLength(1_000);
    deliverer.start();
    deliverer.kick(1_000);
    await expect.poll(() => delivered, { timeout: 20_000 }).toBe(1_000);
    await deliverer.drained();
  } finally {
    await deliverer.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const said = `${calls} calls, ${apart} marks apart, ${sqliteCounts.commits - from} commits, ${lateAsks} late asks`;
  // Ten calls of 100; each one's mark went with its place (its spacer's wait, 5 ms at most, is within MAX_MARK_LEAD_MS).
  expect(calls, said).toBe(10);
  expect(apart, said).toBe(0);
  // Every item once.
  expect(
    items.every((item) => eventsOf((item.entry as { fields: Record<string, string> }).fields['str::email']!).length === 1),
    said,
  ).toBe(true);
}, 60_000);
