/**
 * Diagnose: which tier of V8's code the relay's CPU ran in, from a `--prof` log of it. Each tick
 * (a 1 ms sample of the main thread) whose top frame runs JavaScript (a builtin, the interpreter,
 * Sparkplug's baseline code, TurboFan's optimised code, a regular expression) is counted under the
 * innermost JavaScript function on its stack and that function's tier: a property load or a call
 * made by baseline code runs in a generic builtin (an inline cache), which optimised code mostly
 * does inline. Ticks in C++ (libsql, writes, the WAL's sync) and garbage collection are counted
 * apart. What a cold relay spends in code not yet optimised, by function, file and tier:
 *
 *   npm run build
 *   BENCH_RELAY_NODE_ARGS="--prof --logfile=/tmp/prof/v8.log --no-logfile-per-isolate" npx tsx bench/delivery.ts --only cpu
 *   npx tsx bench/diagnose/tiers.ts /tmp/prof/v8.log [--skip-ms 1500] [--top 40] [--match sql-outbox]
 *
 * --skip-ms leaves out the process's start (its modules' load and first compiles); --match keeps
 * the functions whose name or file matches. Prints only. Ticks are samples of time, which the
 * machine's load moves; their shares by tier move much less.
 */
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'skip-ms': { type: 'string', default: '1500' }, top: { type: 'string', default: '40' }, match: { type: 'string' } },
});
const log = positionals[0];
if (log === undefined) throw new Error('usage: tiers.ts <v8.log> [--skip-ms 1500] [--top 40] [--match regex]');

interface Code {
  name: string;
  type: string;
  kind?: string;
}
interface Profile {
  code: Code[];
  ticks: { tm: number; vm: number; s: number[] }[];
}
const profile = JSON.parse(
  execFileSync(process.execPath, ['--prof-process', '--preprocess', log], { maxBuffer: 1 << 30, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }),
) as Profile;

/** JavaScript code by tier: Unopt (the interpreter's), Sparkplug (baseline), Maglev, Opt (TurboFan). */
const TIERS = new Set(['Unopt', 'Sparkplug', 'Maglev', 'Opt']);
/** A top frame that is running JavaScript, or a builtin on its behalf. */
const RUNNING_JS = new Set([...TIERS, 'Builtin', 'BytecodeHandler', 'RegExp']);
const IDLE = 8;
const GC = 1;
const short = (name: string) => name.replace(/(?:file:\/\/)?\/\S*?\/(dist|node_modules)\//, '$1/').replace(/-[\w-]{8}\.js/, '.js');
const count = (into: Map<string, Record<string, number>>, key: string, tier: string) => {
  const row = into.get(key) ?? {};
  row[tier] = (row[tier] ?? 0) + 1;
  into.set(key, row);
};

const start = profile.ticks[0]?.tm ?? 0;
const skipUs = Number(values['skip-ms']) * 1000;
const match = values.match === undefined ? undefined : new RegExp(values.match);
const outside: Record<string, number> = {};
const byTier: Record<string, number> = {};
const byFunction = new Map<string, Record<string, number>>();
const byFile = new Map<string, Record<string, number>>();
const builtins = new Map<string, Record<string, number>>();
let busy = 0;
for (const tick of profile.ticks) {
  if (tick.tm - start < skipUs || tick.vm === IDLE) continue;
  busy++;
  const top = tick.s[0]! >= 0 ? profile.code[tick.s[0]!] : undefined;
  const kind = top?.kind ?? top?.type ?? 'unknown';
  if (tick.vm === GC || !RUNNING_JS.has(kind)) {
    const where = tick.vm === GC ? 'GC' : kind === 'CPP' || kind === 'SHARED_LIB' || kind === 'unknown' ? 'C++ and libraries' : kind;
    outside[where] = (outside[where] ?? 0) + 1;
    continue;
  }
  let fn: Code | undefined;
  for (let i = 0; i < tick.s.length && fn === undefined; i += 2) {
    const code = tick.s[i]! >= 0 ? profile.code[tick.s[i]!] : undefined;
    if (code?.kind !== undefined && TIERS.has(code.kind)) fn = code;
  }
  const tier = fn?.kind ?? 'none';
  byTier[tier] = (byTier[tier] ?? 0) + 1;
  if (kind === 'Builtin') count(builtins, top!.name, tier);
  if (fn === undefined) continue;
  const name = short(fn.name);
  if (match !== undefined && !match.test(name)) continue;
  count(byFunction, name, tier);
  count(byFile, name.slice(name.lastIndexOf(' ') + 1).replace(/:\d+:\d+$/, ''), tier);
}

const pct = (n: number) => `${((100 * n) / busy).toFixed(1)}%`;
const cold = (row: Record<string, number>) => (row['Unopt'] ?? 0) + (row['Sparkplug'] ?? 0);
const total = (row: Record<string, number>) => Object.values(row).reduce((a, b) => a + b, 0);
const top = Number(values.top);
const table = (rows: Map<string, Record<string, number>>, label: string) =>
  [...rows]
    .sort((a, b) => cold(b[1]) - cold(a[1]) || total(b[1]) - total(a[1]))
    .slice(0, top)
    .map(([key, row]) => ({
      [label]: key.slice(0, 100),
      ticks: total(row),
      interpreted: row['Unopt'] ?? 0,
      baseline: row['Sparkplug'] ?? 0,
      optimised: (row['Opt'] ?? 0) + (row['Maglev'] ?? 0),
    }));

const running = Object.values(byTier).reduce((a, b) => a + b, 0);
console.log(`busy ticks ${busy} (from ${values['skip-ms']} ms on); running JavaScript ${running} (${pct(running)}), by the tier of its innermost function:`);
console.log(Object.fromEntries(Object.entries(byTier).map(([tier, n]) => [tier, `${n} (${pct(n)})`])));
console.log('elsewhere:', Object.fromEntries(Object.entries(outside).map(([where, n]) => [where, `${n} (${pct(n)})`])));
console.table(table(builtins, 'builtin').slice(0, 15));
console.table(table(byFile, 'file'));
console.table(table(byFunction, 'function'));
