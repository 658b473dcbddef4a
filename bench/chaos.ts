/**
 * The chaos suite in full: N events (default 2,000) spread over every scenario of
 * test/e2e/chaos-scenarios.ts, in real Chromium against the relay process and the emulator,
 * counted at the emulator. Goal: 0 lost and 0 duplicated in every scenario, and held (as dead
 * letters) only the events of calls whose outcome the relay could not know (misheld 0), each one
 * listed by `cdp-edge outbox list` (unlisted 0).
 *
 *   npm run build && npx tsx bench/chaos.ts [--events 2000] [--deadline-seconds 45]
 *
 * Prints a table and writes bench/results/chaos.json (per scenario: sent, arrived, held in the
 * relay's dead-letter list, lost (neither arrived nor held), duplicated, seconds, what the pages
 * saw of /collect, faults the platform injected). The applied-then-504 and applied-then-drop
 * scenarios apply calls and then fail them, so a relay that resends blindly shows duplicates.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CHROMIUM_PATH, launchChromium } from '../test/e2e/chromium.js';
import { SCENARIOS, runScenario, type ScenarioResult } from '../test/e2e/chaos-scenarios.js';
import { startChaosStack } from '../test/e2e/chaos-stack.js';

const { values } = parseArgs({ options: { events: { type: 'string', default: '2000' }, 'deadline-seconds': { type: 'string', default: '45' } } });
const EVENTS = Number(values.events);
const DEADLINE_MS = Number(values['deadline-seconds']) * 1000;
if (!Number.isInteger(EVENTS) || EVENTS < SCENARIOS.length) throw new RangeError(`--events must be an integer ≥ ${SCENARIOS.length}`);
const perScenario = Math.ceil(EVENTS / SCENARIOS.length);

const stack = await startChaosStack(perScenario);
const browser = await launchChromium();
const results: ScenarioResult[] = [];
const started = Date.now();
try {
  for (const scenario of SCENARIOS) {
    const result = await runScenario(browser, stack, scenario, perScenario, DEADLINE_MS);
    results.push(result);
    console.log(
      `${result.name}: sent ${result.sent}, arrived ${result.arrived}, held ${result.held}, lost ${result.lost}, duplicated ${result.duplicated} in ${result.seconds} s`,
    );
  }
} finally {
  await browser.close();
  await stack.close();
}

const sum = (key: 'sent' | 'arrived' | 'held' | 'lost' | 'duplicated' | 'unexpected' | 'misheld' | 'unlisted') => results.reduce((n, r) => n + r[key], 0);
const totals = {
  sent: sum('sent'),
  arrived: sum('arrived'),
  held: sum('held'),
  lost: sum('lost'),
  duplicated: sum('duplicated'),
  unexpected: sum('unexpected'),
  misheld: sum('misheld'),
  unlisted: sum('unlisted'),
};
const report = {
  benchmark: 'chaos',
  date: new Date().toISOString(),
  chromium: `${browser.version()} (${CHROMIUM_PATH})`,
  node: process.version,
  events: EVENTS,
  per_scenario: perScenario,
  deadline_seconds_per_scenario: DEADLINE_MS / 1000,
  setup:
    'script-tag snippet (dist/cdp.js, flushInterval 100 ms) in headless Chromium → `cdp-edge relay` (own process, state file, RELAY_BUDGET_MS 1500) → emulator; sent = track() Promises that resolved',
  goal: { lost: 0, duplicated: 0, misheld: 0, unlisted: 0 },
  met: totals.lost === 0 && totals.duplicated === 0 && totals.misheld === 0 && totals.unlisted === 0 && totals.sent === results.length * perScenario,
  seconds: Math.round((Date.now() - started) / 1000),
  totals,
  scenarios: results,
};
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/chaos.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
console.table(
  results.map((r) => ({
    scenario: r.name,
    sent: r.sent,
    arrived: r.arrived,
    held: r.held,
    lost: r.lost,
    duplicated: r.duplicated,
    s: r.seconds,
    'drain s': r.drain_seconds,
    'platform faults': r.faults_injected,
    '/collect failed': r.collect.failed,
  })),
);
console.log(`totals: ${JSON.stringify(totals)}; wrote bench/results/chaos.json`);
if (!report.met) process.exitCode = 1;
