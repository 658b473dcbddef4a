/**
 * Diagnose: what the in-process outbox (state/memory-outbox.ts) itself costs per item, apart from
 * ingest and the deliverer: its accept, and its lease, `sending` and settle as a deliverer calls
 * them. The items are the real handler's: requests of --batch tracks from --visitors visitor
 * addresses go through POST /collect's handler first (not measured) into an outbox that only keeps
 * what it is handed. Then each round accepts its --items into one memory outbox in those requests'
 * batches, and drains it in leases of --lease, each marked `sending` and settled delivered by 100
 * (a platform call's worth), and the shapes of each 100 learned as the relay does (`onTaken`).
 * Each part's CPU per 100 items and the bytes it allocates on V8's heap per item (a count the
 * load does not move: bench/lib/gc-count.js), median and least of the rounds. The outbox stays
 * the same across rounds, so its window's ids grow as a relay's do.
 *
 *   npx tsx bench/diagnose/memory-outbox-cost.ts [--items 20000] [--rounds 8] [--batch 10] [--visitors 100000] [--lease 1000]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { createRelayHandlers } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import { createShapes, learnLeased } from '../../src/relay/ingest/shapes.js';
import { createMemoryOutbox } from '../../src/relay/state/memory-outbox.js';
import type { Outbox, OutboxItem } from '../../src/relay/state/outbox.js';
import { benchTrack, collectRequest, visitorAddress } from '../lib/collect-request.js';
import { countAllocations } from '../lib/heap-alloc.js';

const { values } = parseArgs({
  options: {
    items: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '8' },
    batch: { type: 'string', default: '10' },
    visitors: { type: 'string', default: '100000' },
    lease: { type: 'string', default: '1000' },
  },
});
const ITEMS = Number(values.items);
const ROUNDS = Number(values.rounds);
const BATCH = Number(values.batch);
const VISITORS = Number(values.visitors);
const LEASE = Number(values.lease);
const CALL = 100;
const ORIGIN = 'https://shop.example.com';

const config = parseConfig({
  CDP_API_KEY: 'bench-platform-key',
  CDP_BASE_URL: 'http://127.0.0.1:9',
  RELAY_LOG: 'off',
  RELAY_TRUST_PROXY: '127.0.0.1',
  RELAY_SITES: JSON.stringify([{ key: 'pk_bench', origins: [ORIGIN], verify: 'open', visitor_rate_limit: { per_second: 1_000_000, burst: 1_000_000 } }]),
});

// The items as ingest hands them on: an outbox that keeps each accept's batch and takes it whole.
const batches: OutboxItem[][] = [];
const keeping = createMemoryOutbox();
const handed: Outbox = {
  ...keeping,
  accept: async (items) => {
    batches.push([...items]);
    return { accepted: items.map((item) => item.id), duplicate: [], full: [] };
  },
};
const handlers = createRelayHandlers(config, {
  transport: async () => ({ status: 200, contentType: 'application/json', retryAfter: undefined, body: new Uint8Array() }),
  logger: () => {},
  outbox: handed,
  deliver: false,
});
let serial = 0;
for (let request = 0; request < (ROUNDS * ITEMS) / BATCH; request++) {
  const ts = new Date().toISOString();
  const batch = Array.from({ length: BATCH }, () => benchTrack(serial++, ts));
  const answer = await handlers.collect(collectRequest(ORIGIN, JSON.stringify({ key: 'pk_bench', sent_at: ts, batch })), {
    ip: visitorAddress(request % VISITORS),
  });
  if (answer.status !== 200) throw new Error(`request ${request} answered ${answer.status}`);
}

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
/** One part's CPU and bytes, summed over a round. */
const part = () => ({ ms: 0, bytes: 0 });
const timed = async <T>(into: { ms: number; bytes: number }, work: () => Promise<T> | T): Promise<T> => {
  const counted = countAllocations();
  const started = cpuMs();
  const result = await work();
  into.ms += cpuMs() - started;
  into.bytes += counted().bytes;
  return result;
};

const outbox = createMemoryOutbox();
const shapes = createShapes();
const perRound = ITEMS / BATCH;
const rounds: { accept: ReturnType<typeof part>; deliver: ReturnType<typeof part>; learn: ReturnType<typeof part>; delivered: number }[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const round = { accept: part(), deliver: part(), learn: part(), delivered: 0 };
  await timed(round.accept, async () => {
    for (const items of batches.slice(r * perRound, (r + 1) * perRound)) await outbox.accept(items, Date.now(), config.windowMs, config.outboxLimits);
  });
  for (let n = 0; ; n++) {
    const owner = `bench#${r}.${n}`;
    const leased = await timed(round.deliver, () => outbox.lease(owner, LEASE, Date.now(), 30_000));
    if (leased.length === 0) break;
    for (let at = 0; at < leased.length; at += CALL) {
      const call = leased.slice(at, at + CALL);
      const seqs = call.map((entry) => entry.seq);
      await timed(round.deliver, async () => {
        await outbox.sending(owner, seqs, Date.now());
        await outbox.settle(owner, { delivered: seqs, released: [], dead: [] }, Date.now());
      });
      await timed(round.learn, () => learnLeased(shapes, call, Date.now()));
      round.delivered += call.length;
    }
  }
  if (round.delivered !== ITEMS) throw new Error(`round ${r} delivered ${round.delivered} of ${ITEMS}`);
  rounds.push(round);
}

const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
const figures = (which: 'accept' | 'deliver' | 'learn') => {
  const ms = rounds.map((round) => (round[which].ms / ITEMS) * 100);
  const bytes = rounds.map((round) => round[which].bytes / ITEMS);
  return `${which} ${median(ms).toFixed(3)} ms per 100 items (least ${Math.min(...ms).toFixed(3)}), ${median(bytes).toFixed(0)} B an item`;
};
console.log(
  `${figures('accept')}; lease, sending and settle: ${figures('deliver')}; shapes learned: ${figures('learn')}; medians of ${ROUNDS} rounds of ${ITEMS} items in requests of ${BATCH}, leases of ${LEASE}; load average ${loadavg()[0]!.toFixed(2)}`,
);
