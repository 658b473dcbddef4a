import { defineConfig } from 'vitest/config';

/**
 * `npm run test:next`: the Next.js example built with `next build` and started (test/next). Its
 * own run, after `npm test` in .ci/run, because the build alone takes a minute or more on 2 cores.
 */
export default defineConfig({
  test: {
    name: 'next',
    environment: 'node',
    include: ['test/next/next.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 600_000,
  },
});
