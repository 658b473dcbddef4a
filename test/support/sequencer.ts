/**
 * The order `npm test` starts its files in, over all projects at once (vitest.config.ts gives
 * them one pool). Vitest's own order runs project after project, so on a few cores the browser
 * files, which mostly wait, would run against each other and the CPU-bound node files against
 * each other. Here:
 * - when the last run's duration of every file is known (Vitest's cache), the longest start
 *   first, whatever their project: the run then ends with short files on every worker;
 * - otherwise (a fresh clone) the projects take turns, each starting its largest file first, so
 *   each worker mixes waiting files with busy ones.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export default class InterleavedSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { cache, config } = this.ctx;
    const key = (spec: TestSpecification) => `${spec.project.name}:${relative(config.root, spec.moduleId)}`;
    const durations = files.map((spec) => cache.getFileTestResults(key(spec))?.duration);
    if (durations.every((duration) => duration !== undefined)) {
      const byFile = new Map(files.map((spec, i) => [spec, durations[i] ?? 0]));
      return [...files].sort((a, b) => (byFile.get(b) ?? 0) - (byFile.get(a) ?? 0));
    }
    const size = (spec: TestSpecification) => cache.getFileStats(key(spec))?.size ?? 0;
    const lanes = new Map<string, TestSpecification[]>();
    for (const spec of files) lanes.set(spec.project.name, [...(lanes.get(spec.project.name) ?? []), spec]);
    const queues = [...lanes.values()].map((lane) => lane.sort((a, b) => size(b) - size(a)));
    const order: TestSpecification[] = [];
    while (order.length < files.length) for (const queue of queues) if (queue.length > 0) order.push(queue.shift() as TestSpecification);
    return order;
  }
}
