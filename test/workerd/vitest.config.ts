/**
 * The workerd project: the relay's Worker entry (src/relay/cloudflare.ts) runs inside workerd
 * via @cloudflare/vitest-plugin with a real Durable Object (SQLite), against a loopback
 * upstream started in Node (global-setup.ts).
 */
import { fileURLToPath } from 'node:url';
import { cloudflareTest } from '@cloudflare/vitest-plugin';
import { defineProject } from 'vitest/config';

export default defineProject({
  plugins: [
    cloudflareTest(({ inject }) => ({
      wrangler: { configPath: fileURLToPath(new URL('./wrangler.toml', import.meta.url)) },
      miniflare: { bindings: { TEST_UPSTREAM: inject('upstreamUrl'), CDP_BASE_URL: inject('upstreamUrl') } },
    })),
  ],
  test: {
    name: 'workerd',
    root: fileURLToPath(new URL('../..', import.meta.url)),
    include: ['test/workerd/**/*.test.ts'],
    globalSetup: [fileURLToPath(new URL('./global-setup.ts', import.meta.url))],
    setupFiles: [fileURLToPath(new URL('./setup.ts', import.meta.url))],
    // One file at a time: every file shares the loopback platform (its recorded calls, its scripted
    // faults) and the deployment's outbox objects, as one deployed Worker would.
    fileParallelism: false,
    maxWorkers: 1,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
