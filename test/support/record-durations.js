#!/usr/bin/env node
// Writes test/support/durations.json from the last `vitest run`'s own record of each file's
// duration (Vitest's cache), rounded to 0.1 s. The sequencer starts the longest files first from
// it on a fresh clone, where Vitest has no cache yet. Run it after a full `npm test` on an idle
// machine when files were added or their durations moved a lot: `node test/support/record-durations.js`.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cacheDir = join(root, 'node_modules', '.vite', 'vitest');
const files = readdirSync(cacheDir, { recursive: true })
  .map(String)
  .filter((file) => file.endsWith('results.json'));
if (files.length !== 1) throw new Error(`expected one Vitest results cache under ${cacheDir}, found ${files.length}`);
const { results } = JSON.parse(readFileSync(join(cacheDir, files[0]), 'utf8'));
const durations = Object.fromEntries(results.map(([key, { duration }]) => [key, Math.round(duration / 100) / 10]).sort(([a], [b]) => (a < b ? -1 : 1)));
writeFileSync(join(root, 'test', 'support', 'durations.json'), `${JSON.stringify(durations, null, 2)}\n`);
console.log(`test/support/durations.json: ${results.length} files`);
