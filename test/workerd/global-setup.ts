/**
 * Runs in Node before the workerd project: starts the loopback test upstream (in front of
 * the emulator when it is available) and hands its address to the Worker as TEST_UPSTREAM.
 */
import type { TestProject } from 'vitest/node';
import { startUpstreamStack } from '../relay/support/stack.js';

declare module 'vitest' {
  export interface ProvidedContext {
    upstreamUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const stack = await startUpstreamStack();
  project.provide('upstreamUrl', stack.url);
  return () => stack.close();
}
