/**
 * The peer analytics SDKs the size and peers benches compare with live in their own install,
 * bench/peers (package.json and lock there), so that a contributor's `npm ci` never downloads
 * them. `npm run bench:peers` installs them; the benches do it on first run.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PEERS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'peers');
export const PEERS_MODULES = join(PEERS_DIR, 'node_modules');

/** Installs bench/peers from its lock unless it is installed already. */
export function ensurePeerSdks(): void {
  if (existsSync(join(PEERS_MODULES, '.package-lock.json'))) return;
  console.log('installing the peer SDKs into bench/peers (npm ci --prefix bench/peers) …');
  execFileSync('npm', ['ci', '--prefix', PEERS_DIR, '--no-audit', '--no-fund'], { stdio: 'inherit' });
}
