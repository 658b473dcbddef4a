/**
 * The figures section of bench/README.md, made from bench/results/*.json alone: one row per
 * bench with the date its results were written and a line of figures, then every target the
 * results show missed. `node bench/table.js` rewrites the section; bench/run.js does after every
 * run, and test/bench-readme.test.ts fails when the README and the results disagree.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { summarise } from './summarise.js';

const here = dirname(fileURLToPath(import.meta.url));
export const START = '<!-- figures:start -->';
export const END = '<!-- figures:end -->';
/** The root README's table of every target, met and missed. */
export const TARGETS_START = '<!-- targets:start -->';
export const TARGETS_END = '<!-- targets:end -->';

const escapeCell = (text) => String(text).replaceAll('|', '\\|');

/** Each bench's summary (headline, targets) and the date of its results. */
function benches(dir) {
  const names = readdirSync(dir)
    .filter((file) => file.endsWith('.json') && file !== 'summary.json')
    .map((file) => file.slice(0, -5))
    .sort();
  return names.map((name) => {
    const result = JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8'));
    const { headline, targets } = summarise(name, result);
    return { name, date: String(result.date ?? '').slice(0, 10) || 'undated', headline, targets };
  });
}

/** The root README's table (markers included): every target, missed ones first. */
export function renderTargets(dir = join(here, 'results')) {
  const rows = benches(dir).flatMap((bench) => bench.targets.filter((t) => t.met !== null).map((t) => ({ ...t, bench: bench.name, date: bench.date })));
  rows.sort((a, b) => Number(a.met) - Number(b.met));
  return [
    TARGETS_START,
    '| bench | measure | result | target | |',
    '| --- | --- | --- | --- | --- |',
    ...rows.map((t) => `| ${t.bench} | ${escapeCell(t.what)} | ${t.value} | ${escapeCell(t.target)} | ${t.met ? 'met' : '**missed**'} |`),
    TARGETS_END,
  ].join('\n');
}

/** The section (markers included) for the results in `dir`. */
export function renderFigures(dir = join(here, 'results')) {
  const rows = benches(dir);
  const missed = rows.flatMap((row) => row.targets.filter((t) => t.met === false).map((t) => `${row.name}: ${t.what} = ${t.value} (target ${t.target})`));
  const met = rows.flatMap((row) => row.targets.filter((t) => t.met === true).map((t) => `${row.name}: ${t.what} = ${t.value} (target ${t.target})`));
  return [
    START,
    '| bench | results of | figures |',
    '| --- | --- | --- |',
    ...rows.map((row) => `| ${row.name} | ${row.date} | ${escapeCell(row.headline)} |`),
    '',
    missed.length > 0 ? `**Targets missed:** ${missed.map(escapeCell).join('; ')}.` : '**Targets missed:** none.',
    '',
    `Targets met: ${met.map(escapeCell).join('; ')}.`,
    END,
  ].join('\n');
}

/** Rewrites the section of `readme`; returns true when it changed. */
export function writeFigures(readme = join(here, 'README.md'), dir = join(here, 'results')) {
  const old = existsSync(readme) ? readFileSync(readme, 'utf8') : `# Benchmarks\n\n${START}\n${END}\n`;
  const section = renderFigures(dir);
  const next =
    old.includes(START) && old.includes(END)
      ? old.slice(0, old.indexOf(START)) + section + old.slice(old.indexOf(END) + END.length)
      : `${old.trimEnd()}\n\n${section}\n`;
  if (next !== old) writeFileSync(readme, next);
  return next !== old;
}

/** Rewrites the targets table of the root README; returns true when it changed. */
export function writeTargets(readme = join(here, '..', 'README.md'), dir = join(here, 'results')) {
  const old = readFileSync(readme, 'utf8');
  if (!old.includes(TARGETS_START) || !old.includes(TARGETS_END)) throw new Error(`${readme} has no ${TARGETS_START} … ${TARGETS_END} section`);
  const next = old.slice(0, old.indexOf(TARGETS_START)) + renderTargets(dir) + old.slice(old.indexOf(TARGETS_END) + TARGETS_END.length);
  if (next !== old) writeFileSync(readme, next);
  return next !== old;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log(writeFigures() ? 'bench/README.md: figures rewritten from bench/results' : 'bench/README.md: figures already match bench/results');
  console.log(writeTargets() ? 'README.md: targets rewritten from bench/results' : 'README.md: targets already match bench/results');
}
