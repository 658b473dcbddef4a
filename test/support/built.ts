/**
 * The built package (dist/) for the tests that run it as users do (`bin/cdp-edge.js`): `npm test`
 * builds it before the tests start, so a test rebuilds only when dist/ is missing or older than a
 * source file (a single file run while working). Rebuilding in every such file cost each of them
 * a full Rollup build (10–15 s on 2 cores), and rewrote dist/ under other files reading it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const root = join(import.meta.dirname, '..', '..');

/** The newest modification time under `dir` (ms). */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) latest = Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return latest;
}

/** Builds dist/ (`rollup -c`) unless dist/cli.js is newer than every file of src/ and the build's configuration. */
export function ensureBuilt(): void {
  const cli = join(root, 'dist', 'cli.js');
  const sources = Math.max(newest(join(root, 'src')), statSync(join(root, 'rollup.config.mjs')).mtimeMs, statSync(join(root, 'package.json')).mtimeMs);
  if (existsSync(cli) && statSync(cli).mtimeMs >= sources) return;
  execFileSync('npx', ['rollup', '-c', '--silent'], { cwd: root, stdio: 'ignore' });
}
