/**
 * A platform stand-in per workerd test file. Each file runs in a pool worker of its own with a
 * Miniflare of its own (its own Durable Objects, in memory), so the one thing files would share is
 * the loopback upstream (its recorded calls, its scripted faults): every worker start gets a new
 * one here, and the files run side by side in the suite's pool. They are all closed when the run
 * ends (global-setup.ts). Both the config and the global setup run in Vitest's main process, so
 * the list lives on globalThis (each loads its own copy of this module).
 */
import { startUpstreamStack, type UpstreamStack } from '../relay/support/stack.js';

const KEY = Symbol.for('cdp-edge.workerd-upstreams');
const running = () => ((globalThis as Record<symbol, UpstreamStack[]>)[KEY] ??= []);

/** Starts a stand-in for one test file and remembers it for closeUpstreams. */
export async function startFileUpstream(): Promise<string> {
  const stack = await startUpstreamStack();
  running().push(stack);
  return stack.url;
}

/** Closes every stand-in started so far. */
export async function closeUpstreams(): Promise<void> {
  const stacks = running().splice(0);
  await Promise.all(stacks.map((stack) => stack.close()));
}
