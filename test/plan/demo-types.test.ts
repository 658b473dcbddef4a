// The SPA demo's track() and identify() calls, type-checked against the types generated from the
// demo's own plan (demo/cdp-edge.plan.json). The SPA is plain JavaScript served as is, so tsc
// checks it with checkJs, its tracker seen through `typed()`; only errors on tracker calls count
// (the DOM code is not written for strict checking), and a copy with a planted mistake proves
// that such an error is seen.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateTypes } from '../../src/plan/index.js';
import { readPlanFile } from '../../src/plan/files.js';
import { typecheck } from './tsc.js';

const root = join(import.meta.dirname, '..', '..');
const browser = join(root, 'src', 'browser', 'index.js');
const app = readFileSync(join(root, 'demo', 'spa', 'app.js'), 'utf8');
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cdp-edge-demo-types-'));
  writeFileSync(join(dir, 'plan.ts'), generateTypes(readPlanFile(join(root, 'demo', 'cdp-edge.plan.json')), { importFrom: browser }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The app with its two imports pointed at the sources and the generated module; same line numbers. */
const wired = (source: string) =>
  source
    .replace(
      "import { createTracker } from '/browser.js';",
      `import { createTracker as create } from ${JSON.stringify(browser)}; import { typed } from './plan.js'; /** @param {import(${JSON.stringify(browser)}).TrackerOptions} o */ const createTracker = (o) => typed(create(o));`,
    )
    .replace("import { relay, key } from '/config.js';", "const relay = 'https://t.example.com'; const key = 'pk_demo';");

/** Lines of `file` with a tsc error that involve the tracker (`cdp.`). */
async function trackerErrors(source: string): Promise<number[]> {
  const file = join(dir, 'app.js');
  writeFileSync(file, wired(source));
  const { report } = typecheck([
    '--noEmit',
    '--allowJs',
    '--checkJs',
    '--strict',
    '--skipLibCheck',
    '--target',
    'es2022',
    '--module',
    'esnext',
    '--moduleResolution',
    'bundler',
    '--lib',
    'es2023,dom,dom.iterable',
    '--types',
    'node',
    file,
  ]);
  const lines = source.split('\n');
  const failing = [...report.matchAll(/app\.js\((\d+),\d+\): error/g)].map((match) => Number(match[1]));
  return [...new Set(failing)].filter((line) => /\bcdp\.(track|identify)\(/.test(lines[line - 1] ?? ''));
}

describe('the SPA demo against its plan', () => {
  it('calls track() and identify() as the plan defines them', async () => {
    expect(app).toContain("cdp.track('act:cm:added-to-cart'");
    expect(await trackerErrors(app)).toEqual([]);
  }, 120_000);

  it('would not compile with a wrong-typed attribute', async () => {
    const broken = app.replace("'int:cm:price': 6", "'int:cm:price': '6'");
    expect(broken).not.toBe(app);
    const line = broken.split('\n').findIndex((text) => text.includes("'int:cm:price': '6'")) + 1;
    expect(await trackerErrors(broken)).toEqual([line]);
  }, 120_000);
});
