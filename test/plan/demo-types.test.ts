// The SPA demo's track() and identify() calls, type-checked against the types generated from the
// demo's own plan (demo/cdp-edge.plan.json). The SPA is plain JavaScript served as is, so tsc
// checks it with checkJs, its tracker seen through `typed()`; only errors on tracker calls count
// (the DOM code is not written for strict checking), and a copy with a planted mistake, checked in
// the same tsc program, proves that such an error is seen.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateTypes } from '../../src/plan/index.js';
import { readPlanFile } from '../../src/plan/files.js';
import { STRICT, typecheck } from './tsc.js';

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

/** The app with a planted mistake: a string for an int: attribute. */
const broken = app.replace("'int:cm:price': 6", "'int:cm:price': '6'");

/** Per copy of the app (as is, and broken), the lines with a tsc error that involve the tracker (`cdp.`): one tsc program checks both. */
let trackerErrors: { app: number[]; broken: number[] };
beforeAll(() => {
  const copies = { app: join(dir, 'app.js'), broken: join(dir, 'app-broken.js') };
  writeFileSync(copies.app, wired(app));
  writeFileSync(copies.broken, wired(broken));
  const checked = typecheck([...STRICT, '--allowJs', '--checkJs', '--lib', 'es2023,dom,dom.iterable', copies.app, copies.broken]);
  const errorsOf = (file: string, source: string) => {
    const lines = source.split('\n');
    const failing = [...checked.reportOf(file).matchAll(/\.js\((\d+),\d+\): error/g)].map((match) => Number(match[1]));
    return [...new Set(failing)].filter((line) => /\bcdp\.(track|identify)\(/.test(lines[line - 1] ?? ''));
  };
  trackerErrors = { app: errorsOf(copies.app, app), broken: errorsOf(copies.broken, broken) };
}, 120_000);

describe('the SPA demo against its plan', () => {
  it('calls track() and identify() as the plan defines them', () => {
    expect(app).toContain("cdp.track('act:cm:added-to-cart'");
    expect(trackerErrors.app).toEqual([]);
  });

  it('would not compile with a wrong-typed attribute', () => {
    expect(broken).not.toBe(app);
    const line = broken.split('\n').findIndex((text) => text.includes("'int:cm:price': '6'")) + 1;
    expect(trackerErrors.broken).toEqual([line]);
  });
});
