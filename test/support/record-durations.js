#!/usr/bin/env node
// Writes test/support/durations.json from the last `vitest run`'s own record of each file's
// duration (Vitest's cache), rounded to 0.1 s. The sequencer starts the longest files first from
// it on a fresh clone, where Vitest has no cache yet. Run it after a full `npm test` on Node 22,
// on a machine as idle as you have, when files were added or their durations moved a lot:
// `node test/support/record-durations.js`.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cacheDir = join(root, 'node_modules', '.vite', 'vitest');
const files = readdirSync(cacheDir, { recursive: true })
  .map(String)
  .filter((file) => file.endsWith('results.json'));
if (files.length !== 1) throw new Error(`expected one Vitest results cache under ${cacheDir}, found ${files.length}`);
// Files of this checkout only: a cache kept across checkouts (a node_modules linked into another
// worktree) also holds files that exist elsewhere.
const results = JSON.parse(readFileSync(join(cacheDir, files[0]), 'utf8')).results.filter(([key]) => existsSync(join(root, key.slice(key.indexOf(':') + 1))));
// The deploy files run only on Node 22 (test/deploy/support.ts) and are skipped, in no time, on
// the machine's Node 20: recorded from such a run they started last on a fresh clone's Node 22 run
// (13 s each at load 16-21), after every other file of the pool.
const worker = results.find(([key]) => key === 'node:test/deploy/worker.test.ts');
if (!worker || worker[1].duration < 1000) throw new Error('the last run skipped test/deploy/worker.test.ts: record from a full run on Node 22');
const durations = Object.fromEntries(results.map(([key, { duration }]) => [key, Math.round(duration / 100) / 10]).sort(([a], [b]) => (a < b ? -1 : 1)));
writeFileSync(join(root, 'test', 'support', 'durations.json'), `${JSON.stringify(durations, null, 2)}\n`);
console.log(`test/support/durations.json: ${results.length} files`);
