/**
 * The source layout's rules (docs/architecture.md, "The relay's layers"): every file under src/ is read and
 * its imports found with TypeScript's own `ts.preProcessFile` (static, dynamic and type-only
 * imports alike), and each rule fails naming the file and the import that breaks it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = resolve('src');

/** Every .ts file under src/, as a path relative to src/ with forward slashes. */
function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [relative(SRC, path).split('\\').join('/')] : [];
  });
}

/** The src/ file a relative specifier names (`./x.js`, `./x`, `./dir` → its index.ts). */
function target(from: string, specifier: string): string {
  const base = relative(SRC, resolve(SRC, dirname(from), specifier))
    .split('\\')
    .join('/');
  if (base.endsWith('.js')) return `${base.slice(0, -3)}.ts`;
  if (base.endsWith('.ts')) return base;
  return files.includes(`${base}.ts`) ? `${base}.ts` : `${base}/index.ts`;
}

const files = sourceFiles();
const texts = new Map(files.map((file) => [file, readFileSync(join(SRC, file), 'utf8')]));
/** file → the src/ files it imports. */
const imports = new Map(
  files.map((file) => {
    const found = ts.preProcessFile(texts.get(file)!, true, true).importedFiles.map((entry) => entry.fileName);
    return [file, found.filter((specifier) => specifier.startsWith('.')).map((specifier) => target(file, specifier))];
  }),
);

/** Each break of a rule as `file imports target`, so a failure names both. */
function breaks(rule: (file: string, imported: string) => boolean): string[] {
  return files.flatMap((file) =>
    imports
      .get(file)!
      .filter((imported) => rule(file, imported))
      .map((imported) => `${file} imports ${imported}`),
  );
}

/**
 * The relay's layers, top first. A file may import its own layer or one below, never one above.
 * Every relay file is in exactly one layer, so a new file has to be placed.
 */
const LAYERS: readonly { name: string; holds: (file: string) => boolean }[] = [
  { name: 'runtimes', holds: (file) => /^relay\/(node|cloudflare|index|app)\.ts$/.test(file) || /^relay\/(app|node|workers)\//.test(file) },
  { name: 'doors', holds: (file) => /^relay\/(ingest|proxy|ops)\//.test(file) },
  { name: 'engine', holds: (file) => file.startsWith('relay/deliver/') },
  { name: 'state', holds: (file) => file.startsWith('relay/state/') },
  { name: 'core', holds: (file) => file.startsWith('relay/core/') },
];
const layerOf = (file: string): number => LAYERS.findIndex((layer) => layer.holds(file));
const doorOf = (file: string): string | undefined => /^relay\/(ingest|proxy|ops)\//.exec(file)?.[1];

/**
 * Known debt, to be paid by the engineers who own these files: no file may join a list, and an
 * entry is removed once its file complies. Files over the line limit:
 */
const LONG_FILES_DEBT: readonly string[] = [];
/** Runtime entries over their limit: */
const ENTRY_DEBT: readonly string[] = [];
/** Import cycles, each as its files sorted: */
const CYCLES_DEBT: readonly string[] = [];
const MAX_LINES = 300;
/** The runtime entries are only wiring, each read at a glance. */
const ENTRY_LINES = 100;
const ENTRIES = ['relay/node.ts', 'relay/cloudflare.ts'];

/** Strongly connected groups of two or more files (Tarjan), each as its sorted file list. */
function cycles(): string[] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[] = [];
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    for (const imported of imports.get(file) ?? []) {
      if (!imports.has(imported)) continue;
      if (!index.has(imported)) {
        visit(imported);
        low.set(file, Math.min(low.get(file)!, low.get(imported)!));
      } else if (stack.includes(imported)) low.set(file, Math.min(low.get(file)!, index.get(imported)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      group.push(member);
    } while (member !== file);
    if (group.length > 1) found.push(group.sort().join(' '));
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return found.sort();
}

describe('the source layout', () => {
  it('finds the imports it checks (static, type-only and dynamic)', () => {
    expect(imports.get('relay/index.ts')).toContain('relay/app.ts');
    expect(imports.get('cli/commands.ts')).toContain('cli/dev.ts');
    expect(files.length).toBeGreaterThan(100);
  });

  it('places every relay file in one layer', () => {
    const unplaced = files.filter((file) => file.startsWith('relay/') && layerOf(file) < 0);
    expect(unplaced, 'relay files outside every layer (docs/architecture.md lists them)').toEqual([]);
  });

  it('has no relay import that runs up the layers', () => {
    const upward = breaks((file, imported) => file.startsWith('relay/') && imported.startsWith('relay/') && layerOf(imported) < layerOf(file));
    expect(upward).toEqual([]);
  });

  it('keeps the doors apart: ingest, proxy and ops share only what is below them', () => {
    expect(breaks((file, imported) => doorOf(file) !== undefined && doorOf(imported) !== undefined && doorOf(file) !== doorOf(imported))).toEqual([]);
  });

  it('keeps the relay out of the API, the snippet, the client, the emulator and the plan', () => {
    expect(breaks((file, imported) => /^(api|browser|client|emulator|plan)\//.test(file) && imported.startsWith('relay/'))).toEqual([]);
  });

  it('keeps cdp-edge/server portable (Node, Deno, Bun, workerd): no Node module and nothing of the relay but in its Node-only spool', () => {
    const core = files.filter((file) => file.startsWith('server/') && file !== 'server/spool.ts');
    expect(core.length).toBeGreaterThan(2);
    const nodeOnly = core.flatMap((file) =>
      ts
        .preProcessFile(texts.get(file)!, true, true)
        .importedFiles.map((entry) => entry.fileName)
        .filter((specifier) => specifier.startsWith('node:') || !specifier.startsWith('.'))
        .map((specifier) => `${file} imports ${specifier}`),
    );
    expect(nodeOnly).toEqual([]);
    expect(breaks((file, imported) => core.includes(file) && imported.startsWith('relay/'))).toEqual([]);
  });

  it('has no import cycle but the listed ones', () => {
    expect(cycles().filter((cycle) => !CYCLES_DEBT.includes(cycle))).toEqual([]);
  });

  it(`has no file over ${MAX_LINES} lines but the listed ones, and the runtime entries within ${ENTRY_LINES}`, () => {
    const lines = (file: string) => texts.get(file)!.split('\n').length - (texts.get(file)!.endsWith('\n') ? 1 : 0);
    const over = (limit: number) => (file: string) => lines(file) > limit;
    const named = (file: string) => `${file}: ${lines(file)} lines`;
    expect(
      files
        .filter(over(MAX_LINES))
        .filter((file) => !LONG_FILES_DEBT.includes(file))
        .map(named),
    ).toEqual([]);
    expect(
      ENTRIES.filter(over(ENTRY_LINES))
        .filter((file) => !ENTRY_DEBT.includes(file))
        .map(named),
    ).toEqual([]);
  });
});
