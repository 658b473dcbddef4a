/**
 * The workerd project: the relay's Worker entry (src/relay/cloudflare.ts) runs inside workerd
 * via @cloudflare/vitest-plugin with real Durable Objects (SQLite), against a loopback upstream
 * started in Node. A pool worker runs its files one after another in one Miniflare (`isolate:
 * false`): one runtime, its Durable Objects (in memory), its isolate's modules and one upstream
 * (upstreams.ts) for all of them, instead of one of each per file, which took most of the
 * project's CPU. The pool workers share nothing, so their files run side by side in the suite's
 * pool like any other. A file therefore counts only its own items and calls (its own site keys,
 * emails and object names), never everything the upstream or an object saw, and ends with the
 * outbox objects idle (setup.ts); docs/testing.md says how such a file is written.
 */
import { fileURLToPath } from 'node:url';
import { cloudflareTest } from '@cloudflare/vitest-plugin';
import { defineProject } from 'vitest/config';
import { startWorkerUpstream } from './upstreams.js';

/**
 * Files that count what the deployment's objects (the outbox and router objects, the key's pacer)
 * served since their instance started, across many seconds, or whose calls the state those
 * objects keep shapes: each runs in a Miniflare of its own (the `workerd-alone` project,
 * vitest.alone.config.ts), as every file did before. Beside other files, an object idle 10 s
 * between a file's first count and its next call is evicted by workerd and counts from 0 again,
 * losing what earlier files had counted (shards.test.ts read 190 and 186 accepts for its 200 in
 * both shared runs on the loaded machine; shards.test.ts now also keeps its objects from idling);
 * delivery.test.ts's fill case, when it spread its requests over 16 objects, made 86, 97 and 104
 * calls against its bound of 80 in 3 of 5 shared runs. It now sends into one object (7-10 calls at
 * load 15-25) and has not been tried in a shared Miniflare since.
 */
export const ALONE = ['delivery', 'shards', 'idle-room', 'pacer-requests'].map((name) => `test/workerd/${name}.test.ts`);

/** A workerd project named `name` running `include` (less `exclude`), its files sharing a Miniflare per pool worker unless `isolate`. */
export function workerdProject(name: string, { isolate, include, exclude = [] }: { isolate: boolean; include: string[]; exclude?: string[] }) {
  return defineProject({
    plugins: [
      // Called as each pool worker starts (one Miniflare per worker, for the files it runs).
      cloudflareTest(async () => {
        const { url, deafUrl, halfUrl } = await startWorkerUpstream(name);
        return {
          wrangler: { configPath: fileURLToPath(new URL('./wrangler.toml', import.meta.url)) },
          miniflare: { bindings: { TEST_UPSTREAM: url, CDP_BASE_URL: url, TEST_DEAF_PLATFORM: deafUrl, TEST_HALF_PLATFORM: halfUrl } },
        };
      }),
    ],
    test: {
      name,
      isolate,
      root: fileURLToPath(new URL('../..', import.meta.url)),
      include,
      exclude,
      globalSetup: [fileURLToPath(new URL('./global-setup.ts', import.meta.url))],
      setupFiles: [fileURLToPath(new URL('./setup.ts', import.meta.url))],
      // expect.poll waits up to 5 s, as in the other projects (its own default is 1 s).
      expect: { poll: { timeout: 5_000 } },
      testTimeout: 30_000,
      hookTimeout: 30_000,
    },
  });
}

// Every other file: 23 files in a Miniflare per pool worker.
export default workerdProject('workerd', { isolate: false, include: ['test/workerd/**/*.test.ts'], exclude: ALONE });
