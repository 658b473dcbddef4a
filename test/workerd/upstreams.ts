/**
 * A platform stand-in per pool worker of the workerd project. A worker runs its files one after
 * another in one Miniflare (vitest.config.ts), so its files share this upstream (its recorded
 * calls, its scripted faults) as they share the Durable Objects: each file resets it before it
 * counts, and counts only the calls that carry its own items. Every worker start gets a new one
 * here, and the workers run side by side in the suite's pool. They are all closed when the run
 * ends (global-setup.ts). Both the config and the global setup run in Vitest's main process, so
 * the list lives on globalThis (each loads its own copy of this module).
 */
import { startUpstreamStack, type UpstreamStack } from '../relay/support/stack.js';

const KEY = Symbol.for('cdp-edge.workerd-upstreams');
/** The stand-ins running, by project (`workerd`, `workerd-alone`): each project closes its own. */
function running(project: string): UpstreamStack[] {
  const all = (globalThis as Record<symbol, Record<string, UpstreamStack[]>>)[KEY] ?? {};
  (globalThis as Record<symbol, Record<string, UpstreamStack[]>>)[KEY] = all;
  all[project] ??= [];
  return all[project];
}

/** Starts a stand-in for one pool worker of `project` and remembers it for closeUpstreams. */
export async function startWorkerUpstream(project: string): Promise<string> {
  const stack = await startUpstreamStack();
  running(project).push(stack);
  return stack.url;
}

/** Closes every stand-in started so far for `project`. */
export async function closeUpstreams(project: string): Promise<void> {
  const stacks = running(project).splice(0);
  await Promise.all(stacks.map((stack) => stack.close()));
}
