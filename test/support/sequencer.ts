/**
 * The order `npm test` starts its files in, over all projects at once (vitest.config.ts gives
 * them one pool). The long files start first, longest first, whatever their project, so that
 * none starts late and ends the run alone. The shorter files of the projects whose workers run
 * file after file (`isolate: false`: node, dom, workerd) follow in runs of one project, each run
 * longest first: Vitest keeps such a worker only when the next file in the queue is of its
 * project, and otherwise stops it and starts another, whose imports (and for workerd its
 * Miniflare) are done again. All files longest first alternated projects so often that a full
 * run started 67 worker processes and 25 workerd runtimes for its 194 files; in runs of a
 * project, 26 and 12 (each e2e and workerd-alone file has its own anyway), and the run took about
 * 75 s less CPU. The run with the fewest seconds goes first (dom, then workerd, then node): the
 * workers of the small runs start while long files still keep the cores busy, and the run ends
 * on node's many short files in workers already started. With the largest run first, every
 * worker changed project twice at the end, with nothing else left to run meanwhile.
 *
 * A file's duration is Vitest's own record of its last run (its cache), or on a fresh clone,
 * where there is none, the one kept in `durations.json` (written by `node
 * test/support/record-durations.js` after a full run). A file in neither (just added) counts as
 * the median file.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** seconds per `project:path`, from a full run */
const recorded = JSON.parse(readFileSync(new URL('./durations.json', import.meta.url), 'utf8')) as Record<string, number>;

/** A file that took this long (ms) starts among the long ones; the rest start by project. */
const LONG_MS = 20_000;

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
    const longestFirst = [...files].sort((a, b) => duration(b) - duration(a));
    // A file of a project whose files each get a worker of their own (e2e, workerd-alone) gains
    // nothing from a run of its project: it starts among the long ones.
    const inRunOfItsProject = (spec: TestSpecification) => duration(spec) < LONG_MS && spec.project.config.isolate === false;
    const runs = new Map<string, TestSpecification[]>();
    for (const spec of longestFirst.filter(inRunOfItsProject)) {
      const run = runs.get(spec.project.name);
      if (run) run.push(spec);
      else runs.set(spec.project.name, [spec]);
    }
    const seconds = (run: TestSpecification[]) => run.reduce((sum, spec) => sum + duration(spec), 0);
    // The project with the fewest seconds first: its workers start while the long files still
    // run beside them, and the run ends on the many short files of the largest one.
    const fewestSecondsFirst = [...runs.values()].sort((a, b) => seconds(a) - seconds(b));
    return [...longestFirst.filter((spec) => !inRunOfItsProject(spec)), ...fewestSecondsFirst.flat()];
  }
}
