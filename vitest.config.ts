import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { DRIVER_STALLED } from './test/e2e/engines/webkit.js';
import LongestFirstSequencer from './test/support/sequencer.js';
import { isWorkerdAbortReport } from './test/workerd/abort-report.js';

/**
 * One `npm test` runs every project:
 *  - node:     api, client, emulator, relay (real HTTP on loopback), cli
 *  - timed:    the node files that time their own work (TIMED below), one at a time after the rest
 *  - dom:      the snippet's unit tests in happy-dom with fake-indexeddb
 *  - workerd:  the relay's Worker entry inside workerd (test/workerd/vitest.config.ts; a few files
 *              in workerd-alone, test/workerd/vitest.alone.config.ts)
 *  - e2e:      real browsers against a real relay + emulator
 *
 * All four share one pool of workers, so the browser and workerd files (which mostly wait on
 * pages, timers, alarms and the network) run beside the CPU-bound ones instead of after them.
 * Vitest's default is one worker fewer than the cores (1 on a 2-core machine, where everything
 * then ran one file at a time); here it is two more than the cores, at least 4: the whole run
 * keeps about two thirds of 2 cores busy on average (267 s of user + sys in 209 s with 4; with 3,
 * 221 s in 306 s), as most files wait on pages, alarms and timers, so a third and a fourth file
 * wait beside two busy ones. The files that time their own work run alone after the pool
 * (TIMED). CDP_EDGE_TEST_WORKERS (or `--maxWorkers`) overrides it. The order files start in is
 * test/support/sequencer.ts.
 */
const workers = Number(process.env['CDP_EDGE_TEST_WORKERS']) || Math.max(4, availableParallelism() + 2);

/**
 * Node files whose assertions time the relay's own work against a wall clock (an answer "at once",
 * a rate per second): they run one at a time, after the pool, with no other file of this run
 * competing for the cores.
 */
const TIMED = ['test/security/bounded-work.test.ts', 'test/security/refusals.test.ts', 'test/relay/limits.test.ts'];

/**
 * `expect.poll` waits up to 5 s for what a test waits on (a lead taken, a page's log, a queue
 * emptied), not Vitest's 1 s: on 2 cores busy with the whole suite a process may get no CPU for
 * longer than a second. A test that means "at once" says its own bound.
 */
const waits = { poll: { timeout: 5_000 } };

export default defineConfig({
  test: {
    maxWorkers: workers,
    // workerd's own report of a call it cancelled, none of ours: test/workerd/abort-report.ts.
    onUnhandledError: (error) => (isWorkerdAbortReport(error) ? false : undefined),
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      {
        test: {
          name: 'node',
          expect: waits,
          environment: 'node',
          include: ['test/**/*.test.ts'],
          exclude: ['test/browser/**', 'test/workerd/**', 'test/e2e/**', 'test/container/**', 'test/next/next.test.ts', '**/node_modules/**', ...TIMED],
          testTimeout: 20_000,
          hookTimeout: 30_000,
          // A worker runs file after file with the modules it already imported (src/relay and its
          // dependencies): imported once a worker instead of once a file, the project took 30% less
          // CPU (252 → 175 s, one run each on the loaded machine). Each file still starts its own
          // relays, stores and servers in its hooks; test/relay/support/delivery-kit.ts registers
          // them per file (useDeliveryKit), not when it is imported.
          isolate: false,
          // Cases marked concurrent that run at once (Vitest's default is 5): the six of
          // test/relay/delivery-lease.test.ts that wait out a dead leader's lease, two on each store
          // (onEachBackendAtOnce in test/relay/support/delivery-kit.ts).
          maxConcurrency: 6,
        },
      },
      {
        test: {
          name: 'timed',
          expect: waits,
          environment: 'node',
          include: TIMED,
          maxWorkers: 1,
          // One worker runs the three files one after another, after the pool (group 1 starts
          // once group 0, every other project, is done): not a process and its imports each.
          isolate: false,
          sequence: { groupOrder: 1 },
          testTimeout: 20_000,
          hookTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'dom',
          expect: waits,
          environment: 'happy-dom',
          include: ['test/browser/**/*.test.ts'],
          setupFiles: ['test/browser/setup.ts'],
          testTimeout: 10_000,
          // One worker runs file after file in one process (each file still gets a fresh happy-dom
          // and an empty IndexedDB from setup.ts; src/browser keeps no state in its modules): a
          // process and its imports for each file cost more than most of these files' tests.
          isolate: false,
        },
      },
      'test/workerd/vitest.config.ts',
      'test/workerd/vitest.alone.config.ts',
      {
        test: {
          name: 'e2e',
          expect: waits,
          environment: 'node',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // Once, and only when WebKitWebDriver stopped answering (test/e2e/engines/webkit.ts): never on what the product did.
          retry: { count: 1, condition: new RegExp(DRIVER_STALLED) },
        },
      },
    ],
  },
});
