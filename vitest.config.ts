import { defineConfig } from 'vitest/config';

/**
 * One `npm test` runs every project:
 *  - node:     api, client, emulator, relay (real HTTP on loopback), cli
 *  - dom:      the snippet's unit tests in happy-dom with fake-indexeddb
 *  - workerd:  the relay's Worker entry inside workerd (test/workerd/vitest.config.ts)
 *  - e2e:      real Chromium against a real relay + emulator (serial)
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'node',
          environment: 'node',
          include: ['test/**/*.test.ts'],
          exclude: ['test/browser/**', 'test/workerd/**', 'test/e2e/**', '**/node_modules/**'],
          testTimeout: 20_000,
          hookTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'dom',
          environment: 'happy-dom',
          include: ['test/browser/**/*.test.ts'],
          setupFiles: ['test/browser/setup.ts'],
          testTimeout: 10_000,
        },
      },
      'test/workerd/vitest.config.ts',
      {
        test: {
          name: 'e2e',
          environment: 'node',
          include: ['test/e2e/**/*.test.ts'],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
