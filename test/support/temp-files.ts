import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/**
 * Paths of fresh files (`name`) each in a directory of its own under the system's temporary one,
 * named `prefix…`; every directory made is removed once the test file has run.
 */
export function tempFiles(prefix: string, name = 'state.db'): () => string {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    return join(dir, name);
  };
}
