/**
 * Diagnose: what the relay costs per item beside its outbox and HTTP, in one process: POST
 * /collect's handler (body, checks, identity, enrichment, the hand-off to the memory outbox, the
 * answer, its metrics and log line) and the deliverer's platform calls (lease, bodies, the answer
 * read, the settle) through a transport that answers at once from a cache. Requests of --batch
 * tracks from --visitors visitor addresses, --concurrent in flight, as bench/collect.ts sends;
 * CPU per 100 items from the first request until the outbox is empty. Run it under `node
 * --cpu-prof` (through tsx) to see where the CPU goes without the kernel's socket work. --sqlite: the
 * SQLite outbox and its pacer on a file (as the CLI runs them) instead of the memory outbox.
 * Each round also prints the bytes it allocated on V8's heap per request and its scavenges per
 * 10,000 requests (counts the load does not move: bench/lib/heap-alloc.ts). --sites N: one more
 * round under V8's sampling heap profiler, its collected objects kept, printing the N functions
 * that allocated most per request, by their own allocations and with what they called.
 *
 *   npx tsx bench/diagnose/ingest-cost.ts [--requests 4000] [--batch 10] [--concurrent 16] [--visitors 100000] [--rounds 3] [--sqlite] [--sites 40]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createRelayHandlers } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import { observeAll } from '../../src/relay/core/observe.js';
import type { Transport } from '../../src/relay/deliver/transport.js';
import { createRelayMetrics } from '../../src/relay/ops/metrics.js';
import { createStatusRecorder } from '../../src/relay/ops/status.js';
import { createMemoryOutbox } from '../../src/relay/state/memory-outbox.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { countAllocations, sampleAllocations, topSites } from '../lib/heap-alloc.js';
import { benchTrack, collectRequest, visitorAddress } from '../lib/collect-request.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '4000' },
    batch: { type: 'string', default: '10' },
    concurrent: { type: 'string', default: '16' },
    visitors: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '3' },
    sqlite: { type: 'boolean', default: false },
    sites: { type: 'string', default: '0' },
  },
});
const REQUESTS = Number(values.requests);
const BATCH = Number(values.batch);
const CONCURRENT = Number(values.concurrent);
const VISITORS = Number(values.visitors);
const ORIGIN = 'https://shop.example.com';

const config = parseConfig({
  CDP_API_KEY: 'bench-platform-key',
  CDP_BASE_URL: 'http://127.0.0.1:9',
  RELAY_LOG: 'off',
  RELAY_PLATFORM_RATE: '1000000',
  RELAY_TRUST_PROXY: '127.0.0.1',
  RELAY_SITES: JSON.stringify([{ key: 'pk_bench', origins: [ORIGIN], verify: 'open', visitor_rate_limit: { per_second: 1_000_000, burst: 1_000_000 } }]),
});
// The platform: one `queued` per activity, the answer cached by count (its JSON work is not the relay's).
const answers = new Map<number, Uint8Array<ArrayBuffer>>();
const encoder = new TextEncoder();
const activities = (body: string): number => {
  let count = 0;
  for (let at = body.indexOf('"activity_id":'); at >= 0; at = body.indexOf('"activity_id":', at + 1)) count++;
  return count;
};
const transport: Transport = async ({ body }) => {
  const count = activities(body ?? '');
  let answer = answers.get(count);
  if (answer === undefined) {
    answer = encoder.encode(JSON.stringify({ activities: Array.from({ length: count }, () => ({ status: 'queued', person_status: 'queued' })) }));
    answers.set(count, answer);
  }
  return { status: 200, contentType: 'application/json', retryAfter: undefined, body: answer };
};
const dir = values.sqlite ? mkdtempSync(join(tmpdir(), 'cdp-ingest-cost-')) : undefined;
const store = dir === undefined ? undefined : await createSqliteOutbox(join(dir, 'relay-state.db'));
const outbox = store?.outbox ?? createMemoryOutbox();
const metrics = createRelayMetrics({ outbox, limits: config.outboxLimits });
const status = createStatusRecorder();
const handlers = createRelayHandlers(config, {
  transport,
  logger: () => {},
  observer: observeAll(undefined, metrics.observer, status.observer),
  metrics,
  outbox,
  ...(store === undefined ? {} : { pacer: store.pacer(config.platformRate) }),
});

let serial = 0;
let visitor = 0;
const body = () =>
  JSON.stringify({
    key: 'pk_bench',
    sent_at: new Date().toISOString(),
    batch: Array.from({ length: BATCH }, () => benchTrack(serial++, new Date().toISOString())),
  });
const requestOf = (text: string) => collectRequest(ORIGIN, text);
const address = () => visitorAddress(visitor++ % VISITORS);

interface Round {
  cpuPer100: number;
  bytesPerRequest: number;
  scavengesPer10k: number;
}

async function round(requests: number): Promise<Round> {
  const bodies = Array.from({ length: requests }, body);
  let next = 0;
  let notAccepted = 0;
  const before = process.cpuUsage();
  const allocated = countAllocations();
  await Promise.all(
    Array.from({ length: CONCURRENT }, async () => {
      while (next < requests) {
        const answer = await handlers.collect(requestOf(bodies[next++]!), { ip: address() });
        if (answer.status !== 200) notAccepted += BATCH;
      }
    }),
  );
  await handlers.drained({ timeoutMs: 60_000 });
  const { bytes, scavenges } = allocated();
  const used = process.cpuUsage(before);
  if (notAccepted > 0) console.warn(`${notAccepted} items not accepted`);
  return {
    cpuPer100: (used.user + used.system) / 1000 / ((requests * BATCH) / 100),
    bytesPerRequest: bytes / requests,
    scavengesPer10k: (scavenges * 10_000) / requests,
  };
}

await round(Math.ceil(REQUESTS / 5)); // warm-up
const rounds: Round[] = [];
for (let i = 0; i < Number(values.rounds); i++) rounds.push(await round(REQUESTS));
// Other load on the machine only adds CPU time: the best round is the figure to compare.
const figures = rounds.map((r) => r.cpuPer100);
const sorted = [...figures].sort((a, b) => a - b);
console.log(
  `CPU per 100 items: best ${sorted[0]!.toFixed(2)} ms, median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)} (rounds ${figures.map((ms) => ms.toFixed(2)).join(' / ')}; ${REQUESTS} requests of ${BATCH}, ${CONCURRENT} in flight; load average ${loadavg()[0]!.toFixed(2)})`,
);
console.log(
  `allocated per request: ${rounds.map((r) => `${(r.bytesPerRequest / 1024).toFixed(1)} KB`).join(' / ')}; scavenges per 10,000 requests: ${rounds.map((r) => r.scavengesPer10k.toFixed(0)).join(' / ')}`,
);
const SITES = Number(values.sites);
if (SITES > 0) {
  const sites = await sampleAllocations(async () => void (await round(REQUESTS)));
  console.log(`sampled: ${(sites.total / REQUESTS / 1024).toFixed(1)} KB per request; by function's own allocations, per request:`);
  for (const line of topSites(sites.self, SITES, REQUESTS)) console.log(line);
  console.log("by file (builtins counted in their caller's), per request:");
  for (const line of topSites(sites.files, SITES, REQUESTS)) console.log(line);
  console.log('with what they called, per request:');
  for (const line of topSites(sites.inclusive, SITES, REQUESTS)) console.log(line);
}
await handlers.close();
await store?.close();
if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
