/**
 * Where the demo's files are at run time: the package root (the folder whose package.json
 * names cdp-edge), found from this module whether it runs from src/ or from dist/.
 * @module
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/** The package's root folder; throws when this module is not inside the cdp-edge package. */
export function packageRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'cdp-edge') {
      root = dir;
      return root;
    }
    dir = dirname(dir);
  }
  throw new Error('cdp-edge dev: cannot find the cdp-edge package folder (with demo/ and dist/) above ' + fileURLToPath(import.meta.url));
}

/** Content types of the files the demo serves. */
export const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
};
