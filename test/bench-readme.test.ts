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
    expect(section).toMatch(/\| \*\*missed\*\* \|/);
  });

  it('names a missed target, and changes when a result changes', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-results-'));
    const collect = JSON.parse(readFileSync(join(root, 'bench', 'results', 'collect.json'), 'utf8'));
    writeFileSync(join(dir, 'collect.json'), JSON.stringify(collect));
    const before = renderFigures(dir);
    collect.results[0].ratio = 0.01;
    writeFileSync(join(dir, 'collect.json'), JSON.stringify(collect));
    const after = renderFigures(dir);
    expect(after).not.toBe(before);
    // 1-item batches have a target of their own (target_ratio_batch_1), larger ones target_ratio.
    const wanted = collect.results[0].items === 1 ? (collect.target_ratio_batch_1 ?? collect.target_ratio) : collect.target_ratio;
    expect(after).toContain(`relay/bare rps, ${collect.results[0].items}-item batches (no-op upstream) = 0.01 (target ≥ ${wanted})`);
  });
});
