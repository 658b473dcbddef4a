// One process of the cross-process outbox race: through its own connection to the shared SQLite
// file or Redis it accepts the same ids as its siblings, drains the outbox with leases of its own
// and, from a common start time, takes platform calls from the shared pacer for one second: it
// prints `ready` once drained and reads the start time (ms since epoch) from stdin, so a slow
// sibling never makes the others pace alone. Then prints {accepted, delivered, granted}. With the count `until-killed`, it accepts and leases
// until it is killed (see below).
import { createRedisOutbox } from '../../src/relay/state/redis-outbox.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';

const [kind, where, count, prefix] = process.argv.slice(2) as [string, string, string, string];
// The pace is checked on the times the workers pass, so the Redis scripts take them instead of
// Redis's TIME (callerTime); relays on Redis's own clock: test/relay/redis-time.test.ts.
const store = kind === 'redis' ? await createRedisOutbox(where, { prefix, callerTime: true }) : await createSqliteOutbox(where);
const { outbox } = store;
const owner = `worker-${process.pid}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const item = (id: string) => ({ site: 'race', id, kind: 'activity' as const, entry: { id }, browser: 'b', visitor: 'v', accepted: Date.now() });

if (count === 'until-killed') {
  // Accepts 10 new ids at a time and, after each accept resolved, leases 5 for 60 s and marks them
  // sending (a call starts); prints a line for each step done (`a <ids>`, `l <ids>`) until the
  // parent SIGKILLs it mid-way.
  for (let n = 0; ; n += 10) {
    const batch = Array.from({ length: 10 }, (_, i) => item(`${process.pid}-${n + i}`));
    const { accepted } = await outbox.accept(batch, Date.now(), 3600_000);
    process.stdout.write(`a ${accepted.join(' ')}\n`);
    // Leased, then a call with them starts: the send is counted.
    const leased = await outbox.lease(owner, 5, Date.now(), 60_000);
    await outbox.sending(
      owner,
      leased.map((entry) => entry.seq),
      Date.now(),
    );
    process.stdout.write(`l ${leased.map((entry) => entry.id).join(' ')}\n`);
  }
}

const ids = Array.from({ length: Number(count) }, (_, i) => `id-${i}`);
const accepted: string[] = [];
// Ten ids per call, as a browser batch: every id is offered by every process.
for (let i = 0; i < ids.length; i += 10) {
  accepted.push(...(await outbox.accept(ids.slice(i, i + 10).map(item), Date.now(), 3600_000)).accepted);
}
const delivered: string[] = [];
for (let idle = 0; idle < 20; ) {
  const leased = await outbox.lease(owner, 7, Date.now(), 60_000);
  if (leased.length === 0) {
    idle++;
    await sleep(5);
    continue;
  }
  idle = 0;
  delivered.push(...leased.map((entry) => entry.id));
  await outbox.settle(owner, { delivered: leased.map((entry) => entry.seq), released: [], dead: [] }, Date.now());
}

const pacer = store.pacer(20);
const granted: number[] = [];
process.stdout.write('ready\n');
const start = await new Promise<number>((resolve) => process.stdin.once('data', (chunk) => resolve(Number(String(chunk).trim()))));
process.stdin.destroy();
await sleep(Math.max(0, start - Date.now()));
while (Date.now() < start + 1000) {
  const now = Date.now();
  const wait = await pacer.take(now, 'deliver');
  if (wait === 0) granted.push(now);
  else await sleep(wait);
}
process.stdout.write(JSON.stringify({ accepted, delivered, granted }));
await store.close();
