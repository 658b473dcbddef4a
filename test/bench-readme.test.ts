// The figures in bench/README.md are made from bench/results/*.json: when a bench writes new
// results and nobody regenerates the table (`node bench/table.js`), this fails.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { END, renderFigures, renderTargets, START, TARGETS_END, TARGETS_START } from '../bench/table.js';

const root = join(import.meta.dirname, '..');

describe('bench/README.md', () => {
  it('shows exactly the figures of bench/results', () => {
    const readme = readFileSync(join(root, 'bench', 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf(START), readme.indexOf(END) + END.length);
    expect(section).toBe(renderFigures(join(root, 'bench', 'results')));
  });

  it("the root README's performance table shows every target of bench/results, met or missed", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf(TARGETS_START), readme.indexOf(TARGETS_END) + TARGETS_END.length);
    expect(section).toBe(renderTargets(join(root, 'bench', 'results')));
  });

  it('names a missed delivery target in both tables, and a met one as met, as the results change', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-results-'));
    const delivery = JSON.parse(readFileSync(join(root, 'bench', 'results', 'delivery.json'), 'utf8'));
    const at300 = delivery.phases['300'];
    const what = '300 items/s: created → platform p50 ms';
    at300.created_to_platform_ms.p50 = 2500;
    writeFileSync(join(dir, 'delivery.json'), JSON.stringify(delivery));
    const missedLine = (figures: string) => figures.split('\n').find((line) => line.startsWith('**Targets missed:**')) ?? '';
    expect(missedLine(renderFigures(dir))).toContain(`delivery: ${what} = 2500 (target ≤ 2000)`);
    expect(renderTargets(dir)).toContain(`| delivery | ${what} | 2500 | ≤ 2000 | **missed** |`);
    at300.created_to_platform_ms.p50 = 1500;
    writeFileSync(join(dir, 'delivery.json'), JSON.stringify(delivery));
    expect(missedLine(renderFigures(dir))).not.toContain(what);
    expect(renderTargets(dir)).toContain(`| delivery | ${what} | 1500 | ≤ 2000 | met |`);
  });

  it('shows the bare pass-through comparisons as figures, not as targets', () => {
    const targets = renderTargets(join(root, 'bench', 'results'));
    expect(targets).not.toMatch(/relay\/bare/);
    const figures = renderFigures(join(root, 'bench', 'results'));
    expect(figures).toMatch(/\| collect \| [^|]+ \| 1 items: relay \d+ rps vs bare \d+/);
  });

  it("shows collect's ladder (`--ladder`) in its figures when its results hold one, and leaves its targets as they were", () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-results-'));
    const collect = JSON.parse(readFileSync(join(root, 'bench', 'results', 'collect.json'), 'utf8'));
    const ten = collect.results.find((row: { items: number }) => row.items === 10);
    delete ten.ladder;
    writeFileSync(join(dir, 'collect.json'), JSON.stringify(collect));
    const without = { figures: renderFigures(dir), targets: renderTargets(dir) };
    expect(without.figures).not.toContain('ladder');
    const rung = (cpu: number, cpuRatio: number, rps: number, ratio: number) => ({
      ...ten.bare_noop,
      cpu_ms_per_100_items: cpu,
      cpu_ratio: cpuRatio,
      rps,
      ratio,
    });
    ten.ladder = { read: rung(0.25, 0.5, 9000, 2.1), checks: rung(1.3, 2.6, 3000, 0.7) };
    writeFileSync(join(dir, 'collect.json'), JSON.stringify(collect));
    expect(renderFigures(dir)).toContain(
      "ladder at batches of 10, CPU per 100 items (× the bare's) and requests/s (× the bare's): read 0.25 ms (0.5×) 9000 rps (2.1×), checks 1.3 ms (2.6×) 3000 rps (0.7×)",
    );
    expect(renderTargets(dir)).toBe(without.targets);
  });
});
