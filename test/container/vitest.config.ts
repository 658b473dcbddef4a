import { defineConfig } from 'vitest/config';

/**
 * `npm run test:container`: the container image built and run with podman (test/container/). Kept
 * out of `npm test`, which must stay within its time on two cores; .ci/run runs it after.
 */
export default defineConfig({
  test: {
    name: 'container',
    root: new URL('../..', import.meta.url).pathname,
    environment: 'node',
    include: ['test/container/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 30 * 60_000,
  },
});
