/**
 * Bytes a process allocates on V8's heap, counted rather than timed (bench/lib/heap-alloc.ts for
 * this process; a preload for another). Each garbage collection's heap use before it, less the use
 * after the one before (`v8.GCProfiler`): exact up to the profiler's own few bytes, whatever the
 * machine's load.
 *
 * As a preload it counts a whole process and writes `{ bytes, scavenges, others }` to
 * BENCH_GC_FILE when the process exits, e.g. the collect bench's relay:
 *   BENCH_GC_FILE=/tmp/gc.json BENCH_RELAY_NODE_ARGS="--import=<repo>/bench/lib/gc-count.js" npx tsx bench/collect.ts --batches 10 --upstreams noop
 */
import { writeFileSync } from 'node:fs';
import { GCProfiler, getHeapStatistics } from 'node:v8';

const used = () => getHeapStatistics().used_heap_size;

/** Starts counting; the function returned stops and answers what was allocated meanwhile. */
export function countAllocations() {
  const profiler = new GCProfiler();
  const start = used();
  profiler.start();
  return () => {
    const end = used();
    const { statistics } = profiler.stop();
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

const file = process.env['BENCH_GC_FILE'];
if (file) {
  const stop = countAllocations();
  process.once('exit', () => writeFileSync(file, `${JSON.stringify(stop())}\n`));
}
