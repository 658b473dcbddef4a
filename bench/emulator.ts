/**
 * Benchmark: the emulator at scale, over real HTTP on loopback.
 *
 *   npx tsx bench/emulator.ts [--people 100000] [--queries 200]
 *
 * Loads `--people` people through `person/merge` at 100 per request (reporting merges/s),
 * then times `person/get` pages (limit 50) with a string filter, a nested group filter,
 * a sort, and a filter + sort, with values varied per query so nothing is answered from a
 * repeated result. Target: p50 ≤ 50 ms for a filtered page. Prints a table and writes
 * bench/results/emulator.json. Bounded: a fixed number of requests, about a minute.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startEmulator } from '../src/emulator/index.js';

const { values } = parseArgs({ options: { people: { type: 'string', default: '100000' }, queries: { type: 'string', default: '200' } } });
const PEOPLE = Number(values.people);
const QUERIES = Number(values.queries);
const KEY = 'bench-key';
const TARGET_P50_MS = 50;

const FIRST = ['Ann', 'Bob', 'Cat', 'Dan', 'Eve', 'Fay', 'Gus', 'Hal', 'Ida', 'Jon', 'Kim', 'Lou', 'Max', 'Ned', 'Oz', 'Pam'];
const CITIES = ['Paris', 'London', 'Berlin', 'Sydney', 'Tokyo', 'New York'];

const running = await startEmulator({ port: 0, key: KEY });
const call = async (path: string, body: unknown) => {
  const res = await fetch(`${running.url}${path}`, {
    method: 'POST',
    headers: { 'X-Api-Key': KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
  return res.json() as Promise<Record<string, unknown>>;
};

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const round = (n: number) => Math.round(n * 100) / 100;

try {
  await call('/v1/person/custom-field/create', { type: 'integer', name: 'Score' });
  const loadStart = performance.now();
  for (let start = 0; start < PEOPLE; start += 100) {
    const people = Array.from({ length: Math.min(100, PEOPLE - start) }, (_, k) => {
      const i = start + k;
      return {
        fields: {
          'str::email': `user${i}@example${i % 7}.com`,
          'str::first': FIRST[i % FIRST.length],
          'str::last': `Last${(i * 7919) % PEOPLE}`,
          'int:cm:score': (i * 31) % 1000,
          'geo::city': { name: CITIES[i % CITIES.length] },
        },
        tags: i % 10 === 0 ? ['vip'] : [],
      };
    });
    await call('/v1/person/merge', { people });
  }
  const loadSeconds = (performance.now() - loadStart) / 1000;
  const mergesPerSecond = Math.round(PEOPLE / loadSeconds);

  const cases: Record<string, (i: number) => object> = {
    'string filter': (i) => ({ filter: { '$str::contains': { field_id: 'str::email', value: `user${(i * 37) % 1000}` } } }),
    'nested group filter': (i) => ({
      filter: {
        $andgroup: [
          { '$str::ends': { field_id: 'str::email', value: `example${i % 7}.com` } },
          {
            $orgroup: [
              { '$int::greater_than': { field_id: 'int:cm:score', value: ((i * 13) % 1000) * 1000 } },
              { '$geo::is': { field_id: 'geo::city', value: CITIES[i % CITIES.length] } },
            ],
          },
        ],
      },
    }),
    sort: (i) => ({ sort_by_field_id: 'str::last', sort_order: i % 2 ? 'asc' : 'desc', offset: (i * 997) % (PEOPLE - 50) }),
    'filter + sort': (i) => ({
      filter: { '$str::is': { field_id: 'str::first', value: FIRST[i % FIRST.length] } },
      sort_by_field_id: 'int:cm:score',
      sort_order: 'desc',
    }),
  };

  const results: Record<string, { queries: number; p50_ms: number; p95_ms: number; max_ms: number; matches_sample: number }> = {};
  for (const [name, body] of Object.entries(cases)) {
    const times: number[] = [];
    let matches = 0;
    for (let i = 0; i < QUERIES; i++) {
      const t = performance.now();
      const page = await call('/v1/person/get', { ...body(i), limit: 50, fields: ['str::email', 'str::first', 'int:cm:score'] });
      times.push(performance.now() - t);
      matches = (page['meta'] as { total_matches: number }).total_matches;
    }
    times.sort((a, b) => a - b);
    results[name] = {
      queries: QUERIES,
      p50_ms: round(percentile(times, 50)),
      p95_ms: round(percentile(times, 95)),
      max_ms: round(times.at(-1)!),
      matches_sample: matches,
    };
  }

  const report = {
    benchmark: 'emulator',
    date: new Date().toISOString(),
    node: process.version,
    people: PEOPLE,
    load: { merges_per_request: 100, seconds: round(loadSeconds), merges_per_second: mergesPerSecond },
    target_p50_ms: TARGET_P50_MS,
    person_get: results,
    meets_target: Object.entries(results)
      .filter(([name]) => name.includes('filter'))
      .every(([, r]) => r.p50_ms <= TARGET_P50_MS),
  };
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/emulator.json', `${JSON.stringify(report, null, 2)}\n`);

  console.log(`emulator, ${PEOPLE} people: loaded in ${round(loadSeconds)} s = ${mergesPerSecond} merges/s (100 per request)\n`);
  console.log(`${'person/get (limit 50)'.padEnd(24)}${'p50 ms'.padStart(9)}${'p95 ms'.padStart(9)}${'max ms'.padStart(9)}${'matches'.padStart(10)}`);
  for (const [name, r] of Object.entries(results))
    console.log(
      `${name.padEnd(24)}${String(r.p50_ms).padStart(9)}${String(r.p95_ms).padStart(9)}${String(r.max_ms).padStart(9)}${String(r.matches_sample).padStart(10)}`,
    );
  console.log(`\ntarget p50 ≤ ${TARGET_P50_MS} ms for filtered pages: ${report.meets_target ? 'met' : 'NOT met'}; written to bench/results/emulator.json`);
} finally {
  await running.close();
}
