// The figures in bench/README.md are made from bench/results/*.json: when a bench writes new
// results and nobody regenerates the table (`node bench/table.js`), this fails.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { END, renderFigures, START } from '../bench/table.js';

const root = join(import.meta.dirname, '..');

describe('bench/README.md', () => {
  it('shows exactly the figures of bench/results', () => {
    const readme = readFileSync(join(root, 'bench', 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf(START), readme.indexOf(END) + END.length);
    expect(section).toBe(renderFigures(join(root, 'bench', 'results')));
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
    expect(after).toContain(`relay/bare rps, ${collect.results[0].items}-item batches (no-op upstream) = 0.01 (target ≥ ${collect.target_ratio})`);
  });
});
