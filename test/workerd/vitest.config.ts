/**
 * The workerd project: the relay's Worker entry (src/relay/cloudflare.ts) runs inside workerd
 * via @cloudflare/vitest-plugin with real Durable Objects (SQLite), against a loopback upstream
 * started in Node. Each file runs in a worker of its own, whose Miniflare has its own Durable
 * Objects (in memory), and gets its own upstream (upstreams.ts): the files share nothing, so they
 * run side by side in the suite's pool like any other file.
 */
import { fileURLToPath } from 'node:url';
import { cloudflareTest } from '@cloudflare/vitest-plugin';
import { defineProject } from 'vitest/config';
import { startFileUpstream } from './upstreams.js';

export default defineProject({
  plugins: [
    // Called as each file's worker starts (one Miniflare per file).
    cloudflareTest(async () => {
      const upstreamUrl = await startFileUpstream();
      return {
        wrangler: { configPath: fileURLToPath(new URL('./wrangler.toml', import.meta.url)) },
        miniflare: { bindings: { TEST_UPSTREAM: upstreamUrl, CDP_BASE_URL: upstreamUrl } },
      };
    }),
  ],
  test: {
    name: 'workerd',
    root: fileURLToPath(new URL('../..', import.meta.url)),
    include: ['test/workerd/**/*.test.ts'],
    globalSetup: [fileURLToPath(new URL('./global-setup.ts', import.meta.url))],
    setupFiles: [fileURLToPath(new URL('./setup.ts', import.meta.url))],
    // expect.poll waits up to 5 s, as in the other projects (its own default is 1 s).
    expect: { poll: { timeout: 5_000 } },
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
