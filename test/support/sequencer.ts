/**
 * The order `npm test` starts its files in, over all projects at once (vitest.config.ts gives
 * them one pool): the longest first, whatever their project, so the run ends with short files on
 * every worker instead of one long file started last. A file's duration is Vitest's own record of
 * its last run (its cache), or on a fresh clone, where there is none, the one kept in
 * `durations.json` (written by `node test/support/record-durations.js` after a full run). A file in
 * neither (just added) counts as the median file.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** seconds per `project:path`, from a full run */
const recorded = JSON.parse(readFileSync(new URL('./durations.json', import.meta.url), 'utf8')) as Record<string, number>;

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { cache, config } = this.ctx;
    const key = (spec: TestSpecification) => `${spec.project.name}:${relative(config.root, spec.moduleId)}`;
    const known = (spec: TestSpecification) => cache.getFileTestResults(key(spec))?.duration ?? (recorded[key(spec)] ?? Number.NaN) * 1000;
    const durations = new Map(files.map((spec) => [spec, known(spec)]));
    const sorted = [...durations.values()].filter((duration) => !Number.isNaN(duration)).sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
    const duration = (spec: TestSpecification) => {
      const value = durations.get(spec) ?? Number.NaN;
      return Number.isNaN(value) ? median : value;
    };
    return [...files].sort((a, b) => duration(b) - duration(a));
  }
}
