/**
 * What a stretch of this process's work allocates on V8's heap, counted rather than timed.
 *
 * - `countAllocations` (gc-count.js): bytes allocated in all, and the collections by kind.
 * - {@link sampleAllocations}: where those bytes were allocated, by function: V8's sampling heap
 *   profiler with the objects collected since kept (as `--heap-prof` does not), its estimates
 *   summed by each sample's own function (self) and by every function on its stack (total).
 */
import { Session } from 'node:inspector/promises';

export { countAllocations } from './gc-count.js';

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  selfSize: number;
  children: SamplingNode[];
}

export interface AllocationSites {
  total: number;
  /** by `function file:line`, the bytes allocated in it */
  self: Map<string, number>;
  /** by `function file:line`, the bytes allocated in it and in what it called */
  inclusive: Map<string, number>;
  /** by file, the bytes its functions allocated themselves or in the builtins they called */
  files: Map<string, number>;
}

const shortUrl = (url: string) => url.replace(/^.*\/(src|bench|node_modules)\//, '$1/');

/** A function by name, file and line; a builtin (no file) by its caller's too: `next` says little alone. */
const frameName = ({ functionName, url, lineNumber, columnNumber }: SamplingNode['callFrame'], caller?: string): string =>
  url === '' && caller !== undefined
    ? `${functionName} in ${caller}`
    : `${functionName || '(anonymous)'} ${shortUrl(url)}:${lineNumber + 1}:${columnNumber + 1}`;

/** Runs `work` under V8's sampling heap profiler (one sample every `interval` bytes on average). */
export async function sampleAllocations(work: () => Promise<void>, interval = 256): Promise<AllocationSites> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: interval,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  await work();
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: SamplingNode } };
  session.disconnect();
  const sites: AllocationSites = { total: 0, self: new Map(), inclusive: new Map(), files: new Map() };
  const walk = (node: SamplingNode, caller?: string, callerFile = '(native)'): void => {
    const name = frameName(node.callFrame, caller);
    const file = node.callFrame.url === '' ? callerFile : shortUrl(node.callFrame.url);
    sites.self.set(name, (sites.self.get(name) ?? 0) + node.selfSize);
    sites.files.set(file, (sites.files.get(file) ?? 0) + node.selfSize);
    sites.total += node.selfSize;
    for (const child of node.children) walk(child, name, file);
  };
  // Inclusive sums count a function once per stack, however often it recurs on it.
  const inclusive = (node: SamplingNode, stack: Set<string>): number => {
    const name = frameName(node.callFrame);
    let below = node.selfSize;
    const outer = stack.has(name);
    if (!outer) stack.add(name);
    for (const child of node.children) below += inclusive(child, stack);
    if (!outer) {
      stack.delete(name);
      sites.inclusive.set(name, (sites.inclusive.get(name) ?? 0) + below);
    }
    return below;
  };
  walk(profile.head);
  inclusive(profile.head, new Set());
  return sites;
}

/** The `count` largest of `sites`, each as bytes per `per` (e.g. per request). */
export function topSites(sites: Map<string, number>, count: number, per: number): string[] {
  return [...sites]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, bytes]) => `${(bytes / per).toFixed(0).padStart(7)} B  ${name}`);
}
