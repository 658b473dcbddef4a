/**
 * A process that starts the Node relay, then promotes garbage: chunks of
 * objects kept in a ring long enough to outlive two scavenges, then dropped. It prints the
 * largest old space it saw, its live heap after a full GC (`--expose-gc`) and whether the relay
 * bounded the heap's growth, as JSON. With `wasm` it runs a WebAssembly function compiled once the
 * relay started (as undici's parser is) until V8 would recompile it with TurboFan, and prints
 * whether it did (`--allow-natives-syntax`) and whether the relay kept WebAssembly on Liftoff.
 *
 *   node --expose-gc --import tsx test/relay/support/heap-child.ts cli|embedded [wasm]
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
import { wasmKeptOnLiftoff } from '../../../src/relay/node/malloc.js';

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

/** A function summing 1..n in a loop, compiled now: whether V8 recompiled it with TurboFan within 3 s of calls. */
async function tieredUp(): Promise<boolean> {
  // (func (export "sum") (param i32) (result i32) (local i32) (block (loop (br_if 1 (i32.eqz (local.get 0)))
  //   (local.set 1 (i32.add (local.get 1) (local.get 0))) (local.set 0 (i32.sub (local.get 0) (i32.const 1))) (br 0))) (local.get 1))
  const bytes = new Uint8Array([
    0, 97, 115, 109, 1, 0, 0, 0, 1, 6, 1, 96, 1, 127, 1, 127, 3, 2, 1, 0, 7, 7, 1, 3, 115, 117, 109, 0, 0, 10, 35, 1, 33, 1, 1, 127, 2, 64, 3, 64, 32, 0, 69,
    13, 1, 32, 1, 32, 0, 106, 33, 1, 32, 0, 65, 1, 107, 33, 0, 12, 0, 11, 11, 32, 1, 11,
  ]);
  const { instance } = await WebAssembly.instantiate(bytes);
  const sum = instance.exports['sum'] as (n: number) => number;
  const turbofan = new Function('f', 'return %IsTurboFanFunction(f)') as (f: unknown) => boolean;
  const until = Date.now() + 3000;
  while (Date.now() < until && !turbofan(sum)) {
    for (let i = 0; i < 2000; i++) sum(1000);
    // V8 recompiles on a worker thread and installs the code in a task.
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return turbofan(sum);
}

if (process.argv[3] === 'wasm') {
  const turbofan = await tieredUp();
  await stop();
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`${JSON.stringify({ turbofan, liftoff: wasmKeptOnLiftoff() })}\n`);
} else {
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
}
