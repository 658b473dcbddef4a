// The docs name files as they are: every source path written in backticks in README.md,
// bench/README.md and docs/*.md (`src/relay/deliver/round.ts`, `deliver/round.ts`, `round.ts`,
// `test/relay/suite/`) names a file or folder of the repository, so a rename or a removal that
// leaves a page behind fails here, naming the page and the line.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const SKIP = new Set(['node_modules', 'dist', '.git', 'test-results', '.wrangler']);

/** Every file and folder of the repository, relative to its root, folders with a trailing slash. */
function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (SKIP.has(name)) return [];
    const path = join(dir, name);
    const rel = relative(root, path).split('\\').join('/');
    return statSync(path).isDirectory() ? [`${rel}/`, ...walk(path)] : [rel];
  });
}

const entries = walk(root);
const pages = ['README.md', 'bench/README.md', ...readdirSync(join(root, 'docs')).map((name) => `docs/${name}`)].filter((page) => page.endsWith('.md'));
/** Top folders of the repository whose paths the docs may name in full. */
const TOP = /^(src|test|bench|docs|schema|demo|bin|\.ci)\//;
/** A source file, named in full, from inside src/ (`deliver/round.ts`) or bare (`round.ts`). */
const SOURCE = /^[\w.-]+(\/[\w.-]+)*\.(ts|js|mjs)$/;

/** The backticked paths of `page` that name nothing in the repository, as `page:line path`. */
function unknownPaths(page: string): string[] {
  // Inline code only: fenced blocks hold commands and files of the reader's own project.
  const text = readFileSync(join(root, page), 'utf8').replace(/```[\s\S]*?```/g, (block) => block.replace(/[^\n]/g, ' '));
  const found: string[] = [];
  for (const match of text.matchAll(/`([^`\n]+)`/g)) {
    const token = match[1]!.trim();
    if (!TOP.test(token) && !SOURCE.test(token)) continue;
    // (what the build makes, and a package as installed, are not in the repository)
    if (/[*<>{}\s]/.test(token) || /^(\.\/)?(dist|node_modules)\//.test(token)) continue;
    const path = token.replace(/^\.\//, '');
    const exists = entries.some((entry) => entry === path || entry === `${path}/` || entry.endsWith(`/${path}`) || entry.endsWith(`/${path}/`));
    if (!exists) found.push(`${page}:${text.slice(0, match.index).split('\n').length} ${token}`);
  }
  return found;
}

describe('the docs', () => {
  it('read every page, README included', () => {
    expect(pages).toEqual(expect.arrayContaining(['README.md', 'docs/architecture.md', 'docs/scaling.md']));
  });

  it('name only files and folders that exist', () => {
    expect(pages.flatMap(unknownPaths)).toEqual([]);
  });
});
