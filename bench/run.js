/**
 * `npm run bench` (after `npm run build`): every benchmark in bench/*.ts, one after another, each
 * in its own process group with a time budget, plus the fuzz suite at bench strength. The whole
 * run stays under 30 minutes on a 2-core machine (the delivery and Workers benches take most of
 * it): each bench gets its budget or what is left of the total, whichever is smaller. Prints one summary table, writes bench/results/summary.json
 * and rewrites the summary section of bench/README.md with the machine and the date.
 *
 *   node bench/run.js [--only size,collect] [--total-seconds 1800]
 *
 * A bench that is missing, fails, times out or writes no fresh result is reported as such.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { summarise } from './summarise.js';
import { writeFigures, writeTargets } from './table.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const results = join(root, 'bench/results');

const { values } = parseArgs({
  options: { only: { type: 'string' }, 'total-seconds': { type: 'string', default: process.env.BENCH_TOTAL_SECONDS ?? '1800' } },
});
/** 540 s for the benches leaves a minute of the ten for `npm run build` before this script. */
const TOTAL_MS = Number(values['total-seconds']) * 1000;

/**
 * Every bench the issue asks for, in run order, with its budget in seconds. A bench/*.ts not
 * listed here still runs (default budget), after these.
 */
const PLAN = [
  { name: 'size', budget: 45 },
  // six phases of offer (100 s) and drain (up to 45 s each, 90 s after the flood; seconds to tens
  // of seconds once delivery keeps up): about 4 minutes on an idle machine
  { name: 'delivery', budget: 420 },
  // wrangler dev on the shipped wrangler.toml, three rates: 6–9 minutes
  { name: 'workers', budget: 600 },
  { name: 'lease', budget: 120 },
  { name: 'durability', budget: 120 },
  { name: 'emulator', budget: 80 },
  { name: 'relay-proxy', budget: 110 },
  { name: 'relay-cpu', budget: 80 },
  { name: 'collect', budget: 80 },
  // The same servers at a site's pace, 100 requests a second (an open loop): about 80 s
  { name: 'collect-paced', file: 'collect', args: ['--rate', '100', '--batches', '10', '--upstreams', 'noop', '--scale', '0.5'], budget: 120 },
  { name: 'snippet', budget: 60 },
  { name: 'peers', budget: 150 },
  { name: 'chaos', budget: 150 },
  { name: 'state', budget: 150 },
  { name: 'fuzz', budget: 75, command: 'fuzz' },
];
const DEFAULT_BUDGET = 45;
/** Fuzz cases per property in the bench run (npm test runs 150 with a fixed seed); a fresh seed each run, recorded. */
const FUZZ_RUNS = process.env.FUZZ_RUNS ?? '1000';
const FUZZ_SEED = process.env.FUZZ_SEED ?? String(Math.floor(Math.random() * 2 ** 31));

const onDisk = existsSync(join(root, 'bench'))
  ? readdirSync(join(root, 'bench'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.slice(0, -3))
  : [];
let plan = [...PLAN, ...onDisk.filter((name) => !PLAN.some((p) => p.name === name)).map((name) => ({ name, budget: DEFAULT_BUDGET }))];
if (values.only) {
  const only = values.only.split(',');
  plan = plan.filter((p) => only.includes(p.name));
}

/** Runs one command in its own process group; kills the whole group (browsers included) at the deadline. */
function runProcess(args, env, timeoutMs) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    let out = '';
    const keep = (chunk, stream) => {
      const text = chunk.toString();
      stream.write(text);
      out = (out + text).slice(-200_000);
      tail = (tail + text).slice(-4000);
    };
    child.stdout.on('data', (c) => keep(c, process.stdout));
    child.stderr.on('data', (c) => keep(c, process.stderr));
    let timedOut = false;
    const kill = (signal) => {
      try {
        process.kill(-child.pid, signal);
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill('SIGTERM');
      setTimeout(() => kill('SIGKILL'), 5000).unref();
    }, timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      kill('SIGKILL'); // stragglers left in the group (a browser, a server)
      resolve({ code, signal, timedOut, seconds: (Date.now() - started) / 1000, tail, out });
    });
  });
}

const lastLine = (text) =>
  text
    .trim()
    .split('\n')
    .filter((l) => l.trim() && !/npm warn/i.test(l))
    .slice(-1)[0]
    ?.slice(0, 200) ?? '';

/** The JSON a bench wrote during this run, or null. */
function freshResult(name, since) {
  const file = join(results, `${name}.json`);
  if (!existsSync(file) || statSync(file).mtimeMs < since) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

/** The fuzz suite through vitest with FUZZ_RUNS; its per-target lines become bench/results/fuzz.json. */
async function runFuzz(timeoutMs) {
  const since = Date.now();
  const run = await runProcess([join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--project', 'node', 'test/fuzz'], { FUZZ_RUNS, FUZZ_SEED }, timeoutMs);
  const targets = [...run.out.matchAll(/^FUZZ-REPORT (\{.*\})$/gm)].map((m) => JSON.parse(m[1]));
  if (targets.length > 0) {
    const cases = targets.reduce((n, t) => n + t.cases, 0);
    writeFileSync(
      join(results, 'fuzz.json'),
      JSON.stringify(
        {
          benchmark: 'fuzz',
          date: new Date().toISOString(),
          fuzz_runs: Number(FUZZ_RUNS),
          seed: Number(FUZZ_SEED),
          reproduce: `FUZZ_SEED=${FUZZ_SEED} FUZZ_RUNS=${FUZZ_RUNS} npx vitest run --project node test/fuzz`,
          cases,
          passed: run.code === 0,
          targets,
        },
        null,
        2,
      ) + '\n',
    );
  }
  return { ...run, since };
}

const machine = {
  cpus: availableParallelism(),
  cpu_model: cpus()[0]?.model ?? 'unknown',
  memory_gb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
  node: process.version,
  chromium: (() => {
    try {
      return execFileSync(process.env.CDP_EDGE_CHROMIUM ?? '/usr/bin/chromium', ['--version'], { timeout: 15_000, encoding: 'utf8' }).trim();
    } catch {
      return 'not installed';
    }
  })(),
  load_average_1m_at_start: Math.round(loadavg()[0] * 100) / 100,
};

mkdirSync(results, { recursive: true });
const runStarted = Date.now();
const rows = [];
for (const step of plan) {
  const left = TOTAL_MS - (Date.now() - runStarted);
  // A step may run another bench's script with its own arguments (`file`, `args`), writing its own results.
  const file = join(root, 'bench', `${step.file ?? step.name}.ts`);
  if (step.command !== 'fuzz' && !existsSync(file)) {
    rows.push({ name: step.name, status: 'missing', seconds: 0, reason: `bench/${step.file ?? step.name}.ts does not exist` });
    continue;
  }
  if (left < 10_000) {
    rows.push({ name: step.name, status: 'skipped', seconds: 0, reason: `the ${TOTAL_MS / 1000} s total was spent before it could start` });
    continue;
  }
  const timeoutMs = Math.min(step.budget * 1000, left);
  console.log(`\n━━ bench ${step.name} (budget ${Math.round(timeoutMs / 1000)} s) ━━`);
  const since = Date.now();
  const run = step.command === 'fuzz' ? await runFuzz(timeoutMs) : await runProcess(['--import', 'tsx', file, ...(step.args ?? [])], {}, timeoutMs);
  const result = freshResult(step.name, since);
  const status = run.timedOut ? 'timeout' : run.code !== 0 ? 'failed' : result ? 'ok' : 'no result';
  const reason =
    status === 'timeout'
      ? `stopped after its ${Math.round(timeoutMs / 1000)} s budget`
      : status === 'failed'
        ? `exit ${run.code ?? run.signal}: ${lastLine(run.tail)}`
        : status === 'no result'
          ? `bench/results/${step.name}.json was not written`
          : undefined;
  const summary = result ? summarise(step.name, result) : { headline: '', targets: [] };
  rows.push({ name: step.name, status, seconds: Math.round(run.seconds), ...(reason ? { reason } : {}), ...summary });
}
// summary.json is the run's log (what ran, how long, how it ended); the figures live in each bench's
// own results file, from which the READMEs are generated, so no second copy can go stale.
const runLog = rows.map(({ headline: _headline, targets: _targets, ...row }) => row);
const totalSeconds = Math.round((Date.now() - runStarted) / 1000);

const report = { date: new Date().toISOString(), machine, total_seconds: totalSeconds, total_budget_seconds: TOTAL_MS / 1000, benches: runLog };
writeFileSync(join(results, 'summary.json'), JSON.stringify(report, null, 2) + '\n');

const misses = rows.flatMap((r) => (r.targets ?? []).filter((t) => t.met === false).map((t) => `${r.name}: ${t.what} = ${t.value} (target ${t.target})`));
console.log(`\n━━ summary: ${totalSeconds} s on ${machine.cpus} cores, ${machine.memory_gb} GB, Node ${machine.node}, ${machine.chromium} ━━`);
console.table(rows.map((r) => ({ bench: r.name, status: r.status, s: r.seconds, figures: r.reason ?? r.headline })));
if (misses.length > 0) console.log(`targets missed:\n  ${misses.join('\n  ')}`);
writeFigures();
writeTargets();
console.log('wrote bench/results/summary.json and the table in bench/README.md');
if (rows.some((r) => r.status !== 'ok')) process.exitCode = 1;

/** Replaces the part of bench/README.md between the summary markers. */
