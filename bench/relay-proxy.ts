/**
 * Benchmark: the relay's proxy against a bare pass-through, in front of the same mock platform.
 *
 *   npm run build && npx tsx bench/relay-proxy.ts [--requests 3000] [--concurrency 32] [--rounds 5]
 *
 * Separate processes on loopback: the load generator (this one), the mock platform, and
 *  (a) bare   a node:http pass-through that only swaps the caller's Authorization for the key,
 *  (b) proxy  createProxyRoutes on @hono/node-server with createUndiciTransport (the proxy mounted in
 *             your own Hono app),
 *  (c) entry  the whole relay's Node entry (startRelay, what `npx cdp-edge relay` runs: its node:http
 *             front answers `/v1` calls without building a Request or Response);
 * (b) and (c) are the built dist/ on plain Node, as users run it (bench/lib/relay-role.mjs).
 * For `person/get` and a 10-item `person/merge`: requests/s, p50 and p99 of each, CPU time per
 * request in each server process, and the ratio entry/bare, for information (the targets against a
 * bare pass-through are retired: what a relay costs is its CPU per item, bench/delivery.ts). Rounds alternate the
 * targets so a busy moment on the machine hits all of them; the median round counts. Prints a
 * table and writes bench/results/relay-proxy.json.
 */
import { serveRole, spawnRole, type Child } from './lib/children.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import { listen, readBody } from './lib/http.js';

const API_KEY = 'bench-platform-key';
const TOKEN = 'rt_bench_token_0123456789abcdefghijklmnopqrstu';
const TARGETS = ['bare', 'proxy', 'entry'] as const;
type Target = (typeof TARGETS)[number];
type Role = 'upstream' | Target;

/** The mock platform: a 50-person page for person/get, one result per person for person/merge. */
async function startUpstream(): Promise<number> {
  const page = JSON.stringify({
    contacts: Array.from({ length: 50 }, (_, i) => ({
      id: i.toString(16).padStart(24, '0'),
      fields: { 'str::email': `p${i}@example.com`, 'str::first': `P${i}` },
    })),
    meta: { total_contacts: 50, total_organizations: 0, total_matches: 50, total_subscribers: 50 },
    offset: 0,
    next_offset: 50,
    cursor_id: '0'.repeat(24),
    has_more: false,
  });
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const text = await readBody(req);
    if (req.headers['x-api-key'] !== API_KEY) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"code":401,"error":"bad key"}');
      return;
    }
    if (req.url === '/v1/person/merge') {
      const { people } = JSON.parse(text) as { people: unknown[] };
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ people: people.map((_, i) => ({ person_id: i.toString(16).padStart(24, '0'), status: 'merged' })) }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(page);
  });
  return listen(server);
}

/** (a) The baseline: forwards method, path and body, replacing the caller's Authorization with the key. */
async function startBare(upstreamPort: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const server = createServer((req, res) => {
    const headers = { ...req.headers, host: `127.0.0.1:${upstreamPort}`, 'x-api-key': API_KEY };
    delete headers.authorization;
    const out = httpRequest({ host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers, agent }, (upstream) => {
      res.writeHead(upstream.statusCode ?? 502, { 'content-type': upstream.headers['content-type'] ?? 'application/json' });
      upstream.pipe(res);
    });
    out.on('error', () => res.writeHead(502).end());
    req.pipe(out);
  });
  return listen(server);
}

const role = process.argv[2] as Role | undefined;
const isChild = role === 'upstream' || role === 'bare';

if (isChild) {
  const upstreamPort = Number(process.argv[3] ?? 0);
  const start = { upstream: startUpstream, bare: startBare }[role];
  await serveRole(() => start(upstreamPort));
}

/** Starts `which` in a child process and resolves once it listens. */
const spawn = (which: Role, upstreamPort = 0): Promise<Child> =>
  which === 'proxy' || which === 'entry'
    ? // The built relay on plain Node, as users run it (bench/lib/relay-role.mjs).
      spawnRole(new URL('./lib/relay-role.mjs', import.meta.url).pathname, [which, String(upstreamPort), JSON.stringify({ key: API_KEY, token: TOKEN })], {
        plain: true,
      })
    : spawnRole(new URL(import.meta.url).pathname, [which, String(upstreamPort)]);

interface Figures {
  requests: number;
  errors: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  /** CPU time per request in the server under test, and in the mock platform behind it */
  cpu_us_per_request: number;
  upstream_cpu_us_per_request: number;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
const round2 = (n: number) => Math.round(n * 100) / 100;

/** Sends `total` requests with `concurrency` in flight; every loop is bounded by `total`. */
async function load(target: Child, upstream: Child, path: string, body: string, total: number, concurrency: number): Promise<Figures> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
  const one = () =>
    new Promise<number>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port: target.port, method: 'POST', path, headers, agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(0));
      req.end(body);
    });
  let next = 0;
  let errors = 0;
  const latencies: number[] = [];
  const [targetCpu, upstreamCpu] = [await target.cpu(), await upstream.cpu()];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next += 1;
        const t0 = performance.now();
        const status = await one();
        latencies.push(performance.now() - t0);
        if (status !== 200) errors += 1;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const [targetCpuAfter, upstreamCpuAfter] = [await target.cpu(), await upstream.cpu()];
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    requests: total,
    errors,
    rps: Math.round(total / seconds),
    p50_ms: round2(percentile(latencies, 50)),
    p99_ms: round2(percentile(latencies, 99)),
    cpu_us_per_request: Math.round((targetCpuAfter - targetCpu) / total),
    upstream_cpu_us_per_request: Math.round((upstreamCpuAfter - upstreamCpu) / total),
  };
}

const median = (rounds: Figures[]): Figures => [...rounds].sort((a, b) => a.rps - b.rps)[Math.floor(rounds.length / 2)]!;

async function main(): Promise<void> {
  const arg = (name: string, fallback: number) => {
    const index = process.argv.indexOf(`--${name}`);
    const value = index === -1 ? fallback : Number(process.argv[index + 1]);
    if (!Number.isInteger(value) || value <= 0) throw new RangeError(`--${name} must be a positive integer`);
    return value;
  };
  const total = arg('requests', 3000);
  const concurrency = arg('concurrency', 32);
  const rounds = arg('rounds', 5);
  const upstream = await spawn('upstream');
  const servers: Record<Target, Child> = {
    bare: await spawn('bare', upstream.port),
    proxy: await spawn('proxy', upstream.port),
    entry: await spawn('entry', upstream.port),
  };

  const merge = JSON.stringify({
    people: Array.from({ length: 10 }, (_, i) => ({
      fields: { 'str::email': `person${i}@example.com`, 'str::first': `First${i}`, 'str::last': `Last${i}` },
      tags: ['bench'],
    })),
    merge_by: ['str::email'],
  });
  const cases = [
    { name: 'person/get', path: '/v1/person/get', body: JSON.stringify({ limit: 50, fields: ['str::email', 'str::first'] }) },
    { name: 'person/merge (10 people)', path: '/v1/person/merge', body: merge },
  ];
  const results: Record<string, Record<Target, Figures> & { ratio: number; hono_ratio: number; cpu_ratio: number }> = {};
  const loadBefore = loadavg()[0]!;
  for (const { name, path, body } of cases) {
    const measured: Record<Target, Figures[]> = { bare: [], proxy: [], entry: [] };
    for (const target of TARGETS) await load(servers[target], upstream, path, body, 500, concurrency); // warm-up: JIT, sockets
    for (let round = 0; round < rounds; round++) {
      for (const target of TARGETS) measured[target].push(await load(servers[target], upstream, path, body, total, concurrency));
    }
    const [bare, proxy, entry] = TARGETS.map((target) => median(measured[target])) as [Figures, Figures, Figures];
    // CPU per request is steadier than requests/s on a shared machine: what a saturated proxy process would manage.
    const cpuRatio = round2(bare.cpu_us_per_request / entry.cpu_us_per_request);
    results[name] = { bare, proxy, entry, ratio: round2(entry.rps / bare.rps), hono_ratio: round2(proxy.rps / bare.rps), cpu_ratio: cpuRatio };
  }
  for (const { child } of [upstream, ...Object.values(servers)]) child.kill();

  const report = {
    benchmark: 'relay-proxy',
    date: new Date().toISOString(),
    node: process.version,
    cpus: availableParallelism(),
    requests_per_round: total,
    rounds,
    concurrency,
    load_average_1m: { before: round2(loadBefore), after: round2(loadavg()[0]!) },
    ratio:
      'ratio: the relay Node entry (startRelay) rps / bare rps (medians); hono_ratio: createProxyRoutes on @hono/node-server / bare; cpu_ratio: bare CPU per request / entry CPU per request',
    results,
  };
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/relay-proxy.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);

  const row = (cells: (string | number)[]) => cells.map((cell, i) => String(cell).padStart(i === 0 ? 32 : i === 6 ? 18 : 9)).join(' ');
  console.log(
    `relay proxy vs bare pass-through: median of ${rounds} rounds of ${total} requests, concurrency ${concurrency}, loopback, ${availableParallelism()} CPUs, load average ${report.load_average_1m.before} → ${report.load_average_1m.after}`,
  );
  console.log(row(['case / target', 'rps', 'p50', 'p99', 'cpu/req', 'errors', 'vs bare']));
  for (const [name, figures] of Object.entries(results)) {
    for (const target of TARGETS) {
      const f = figures[target];
      const ratio = target === 'bare' ? '' : target === 'entry' ? `${figures.ratio} (cpu ${figures.cpu_ratio})` : String(figures.hono_ratio);
      console.log(row([`${name} ${target}`, f.rps, `${f.p50_ms}ms`, `${f.p99_ms}ms`, `${f.cpu_us_per_request}µs`, f.errors, ratio]));
    }
  }
  console.log('figures written to bench/results/relay-proxy.json');
}

if (!isChild) await main();
