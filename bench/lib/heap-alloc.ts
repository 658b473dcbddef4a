/**
 * What a stretch of this process's work allocates on V8's heap, counted rather than timed.
 *
 * - {@link countAllocations}: bytes allocated in all (the heap's use before each garbage collection
 *   less its use after the one before, from `v8.GCProfiler`), and the collections by kind. Exact
 *   up to the few bytes the profiler itself allocates, whatever the machine's load.
 * - {@link sampleAllocations}: where those bytes were allocated, by function: V8's sampling heap
 *   profiler with the objects collected since kept (as `--heap-prof` does not), its estimates
 *   summed by each sample's own function (self) and by every function on its stack (total).
 */
import { Session } from 'node:inspector/promises';
import { GCProfiler } from 'node:v8';

/** `GCProfiler`'s `gcType` names the kinds: a scavenge (young generation) or a mark-compact, etc. */
interface GcStatistic {
  gcType: string;
  beforeGC: { heapStatistics: { usedHeapSize: number } };
  afterGC: { heapStatistics: { usedHeapSize: number } };
}

export interface AllocationCount {
  bytes: number;
  scavenges: number;
  others: number;
}

/** Starts counting; the function returned stops and answers what was allocated meanwhile. */
export function countAllocations(usedHeapSize: () => number): () => AllocationCount {
  const profiler = new GCProfiler();
  const start = usedHeapSize();
  profiler.start();
  return () => {
    const end = usedHeapSize();
    const { statistics } = profiler.stop() as unknown as { statistics: GcStatistic[] };
    let bytes = 0;
    let previous = start;
    let scavenges = 0;
    for (const { gcType, beforeGC, afterGC } of statistics) {
      bytes += beforeGC.heapStatistics.usedHeapSize - previous;
      previous = afterGC.heapStatistics.usedHeapSize;
      if (gcType === 'Scavenge' || gcType === 'MinorMarkSweep') scavenges++;
    }
    bytes += end - previous;
    return { bytes, scavenges, others: statistics.length - scavenges };
  };
}

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
