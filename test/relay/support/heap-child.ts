/**
 * A process that starts the Node relay, then promotes garbage: chunks of
 * objects kept in a ring long enough to outlive two scavenges, then dropped. It prints the
 * largest old space it saw, its live heap after a full GC (`--expose-gc`) and whether the relay
 * bounded the heap's growth, as JSON.
 *
 *   node --expose-gc --import tsx test/relay/support/heap-child.ts cli|embedded
 *
 * `cli` runs the `cdp-edge relay` command in this process, as `npx cdp-edge relay` does;
 * `embedded` calls `startRelay` as a user's own server does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getHeapSpaceStatistics } from 'node:v8';
import relayCommand from '../../../src/cli/relay.js';
import { startRelay } from '../../../src/relay/node.js';
import { heapGrowthBounded } from '../../../src/relay/node/heap.js';

const MB = 1024 * 1024;
const oldSpace = () => getHeapSpaceStatistics().find((space) => space.space_name === 'old_space')!.space_size;
const env = {
  CDP_API_KEY: 'heap-key',
  CDP_BASE_URL: 'http://127.0.0.1:9',
  RELAY_SITES: JSON.stringify([{ key: 'pk_heap', origins: ['https://heap.example'], verify: 'off' }]),
};
const dir = mkdtempSync(join(tmpdir(), 'cdp-heap-'));

let stop: () => Promise<unknown>;
if (process.argv[2] === 'cli') {
  Object.assign(process.env, env);
  const logged = new Promise<void>((resolve) => {
    const log = console.log;
    console.log = (...args: unknown[]) => {
      if (String(args[0]).includes('listening on')) resolve();
      log(...args);
    };
  });
  const ran = relayCommand.run(['--port', '0', '--state-file', join(dir, 'state.db')]);
  await logged;
  stop = () => {
    process.kill(process.pid, 'SIGTERM');
    return ran;
  };
} else {
  const relay = await startRelay({ port: 0, logger: () => {}, stateFile: join(dir, 'state.db'), env });
  stop = () => relay.close();
}

// About 30 MB alive at any time (a ring of 300 chunks of ~100 kB), 600 MB promoted in all.
const ring: unknown[][] = [];
let peak = 0;
for (let i = 0; i < 6000; i++) {
  ring.push(Array.from({ length: 1000 }, (_, n) => ({ n, i, text: `item ${n}` })));
  if (ring.length > 300) ring.shift();
  if (i % 5 === 0) {
    peak = Math.max(peak, oldSpace());
    // A turn of the event loop now and then, as a server has: V8 marks concurrently and finishes in tasks.
    await new Promise((resolve) => setImmediate(resolve));
  }
}
(globalThis as { gc?: () => void }).gc?.();
const live = getHeapSpaceStatistics().find((space) => space.space_name === 'old_space')!.space_used_size;
await stop();
rmSync(dir, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify({ peakOldMb: peak / MB, liveOldMb: live / MB, bounded: heapGrowthBounded(), ring: ring.length })}\n`);
