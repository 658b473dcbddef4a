// The /collect conformance suite on Node: startRelay on loopback, real HTTP to the test
// upstream in front of the emulator.
import { afterAll, beforeAll } from 'vitest';
import { relaySuite } from './suite/index.js';
import { nodeTarget } from './suite/node-target.js';
import type { RelayTarget } from './suite/target.js';
import { startUpstreamStack, type UpstreamStack } from './support/stack.js';

let stack: UpstreamStack;
let target: RelayTarget;
beforeAll(async () => {
  stack = await startUpstreamStack();
  target = nodeTarget(stack.url);
});
afterAll(() => stack?.close());

relaySuite(() => target);
