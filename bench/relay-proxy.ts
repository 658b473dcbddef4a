/**
 * Benchmark: the relay's proxy against a bare pass-through, in front of the same mock platform.
 *
 *   npx tsx bench/relay-proxy.ts [--requests 4000] [--concurrency 32] [--rounds 3]
 *
 * Four processes on loopback: the load generator (this one), the mock platform, (a) a bare
 * node:http pass-through that only swaps the key, and (b) the proxy (createProxyRoutes on
 * @hono/node-server), each in its own child process. For `person/get` and a 10-item
 * `person/merge` it reports requests/s, p50 and p99 for both, and the ratio relay/bare
 * (target ≥ 0.7), prints a table and writes bench/results/relay-proxy.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fork, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';

const API_KEY = 'bench-platform-key';
const TOKEN = 'rt_bench_token_0123456789abcdefghijklmnopqrstu';

type Role = 'upstream' | 'bare' | 'relay';

const listen = (server: ReturnType<typeof createServer>) =>
  new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

const readAll = async (req: IncomingMessage) => {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
};

/** The mock platform: a 50-person page for person/get, one result per person for person/merge. */
async function startUpstream(): Promise<number> {
  const page = JSON.stringify({
    contacts: Array.from({ length: 50 }, (_, i) => ({ id: i.toString(16).padStart(24, '0'), fields: { 'str::email': `p${i}@example.com`, 'str::first': `P${i}` } })),
    meta: { total_contacts: 50, total_organizations: 0, total_matches: 50, total_subscribers: 50 },
    offset: 0,
    next_offset: 50,
    cursor_id: '0'.repeat(24),
    has_more: false,
  });
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const text = await readAll(req);
    if (req.headers['x-api-key'] !== API_KEY) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"code":401,"error":"bad key"}');
      return;
    }
    if (req.url === '/v1/person/merge') {
      const { people } = JSON.parse(text) as { people: unknown[] };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ people: people.map((_, i) => ({ person_id: i.toString(16).padStart(24, '0'), status: 'merged' })) }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(page);
  });
  return listen(server);
}

/** (a) The baseline: forwards method, path and body, replacing the caller's Authorization with the key. */
async function startBare(upstreamPort: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
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

/** (b) The proxy as the relay's Node entry runs it. */
async function startRelay(upstreamPort: number): Promise<number> {
  const { serve } = await import('@hono/node-server');
  const { createProxyRoutes } = await import('../src/relay/proxy/index.js');
  const { hashToken } = await import('../src/relay/tokens.js');
  const proxy = createProxyRoutes({
    tokens: [{ name: 'bench', sha256: await hashToken(TOKEN), scopes: ['admin'] }],
    upstream: { baseUrl: `http://127.0.0.1:${upstreamPort}`, apiKey: API_KEY },
    logger: () => {},
  });
  return new Promise((resolve) => {
    const server = serve({ fetch: proxy.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve(info.port));
    void server;
  });
}

const role = process.argv[2] as Role | undefined;
const isChild = role === 'upstream' || role === 'bare' || role === 'relay';

if (isChild) {
  const upstreamPort = Number(process.argv[3] ?? 0);
  const port = role === 'upstream' ? await startUpstream() : role === 'bare' ? await startBare(upstreamPort) : await startRelay(upstreamPort);
  process.send?.(port);
  // Ends with the parent: the IPC channel closes when the load generator exits.
  process.on('disconnect', () => process.exit(0));
}

/** Starts `role` in a child process (it inherits tsx's loader through execArgv) and resolves with its port. */
function spawn(which: Role, upstreamPort = 0): Promise<{ port: number; child: ChildProcess }> {
  const child = fork(new URL(import.meta.url).pathname, [which, String(upstreamPort)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (port) => resolve({ port: port as number, child }));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`bench ${which} process exited with ${code} before listening`)));
  });
}

interface Figures {
  requests: number;
  errors: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;

/** Sends `total` requests with `concurrency` in flight; every loop is bounded by `total`. */
async function load(port: number, path: string, body: string, total: number, concurrency: number): Promise<Figures> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
  const one = () =>
    new Promise<number>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path, headers, agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(0));
      req.end(body);
    });
  let next = 0;
  let errors = 0;
  const latencies: number[] = [];
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
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 100) / 100;
  return { requests: total, errors, rps: Math.round(total / seconds), p50_ms: round(percentile(latencies, 50)), p99_ms: round(percentile(latencies, 99)) };
}

const median = (rounds: Figures[]): Figures => [...rounds].sort((a, b) => a.rps - b.rps)[Math.floor(rounds.length / 2)]!;

async function main(): Promise<void> {
  const arg = (name: string, fallback: number) => {
    const index = process.argv.indexOf(`--${name}`);
    const value = index === -1 ? fallback : Number(process.argv[index + 1]);
    if (!Number.isInteger(value) || value <= 0) throw new RangeError(`--${name} must be a positive integer`);
    return value;
  };
  const total = arg('requests', 4000);
  const concurrency = arg('concurrency', 32);
  const rounds = arg('rounds', 3);
  const upstream = await spawn('upstream');
  const bare = await spawn('bare', upstream.port);
  const relay = await spawn('relay', upstream.port);

  const merge = JSON.stringify({
    people: Array.from({ length: 10 }, (_, i) => ({ fields: { 'str::email': `person${i}@example.com`, 'str::first': `First${i}`, 'str::last': `Last${i}` }, tags: ['bench'] })),
    merge_by: ['str::email'],
  });
  const cases = [
    { name: 'person/get', path: '/v1/person/get', body: JSON.stringify({ limit: 50, fields: ['str::email', 'str::first'] }) },
    { name: 'person/merge (10 people)', path: '/v1/person/merge', body: merge },
  ];
  const results: Record<string, { bare: Figures; relay: Figures; ratio: number }> = {};
  for (const { name, path, body } of cases) {
    // Warm both up (JIT, sockets) before measuring; then alternate so neither gets a warmer machine.
    await load(bare.port, path, body, 500, concurrency);
    await load(relay.port, path, body, 500, concurrency);
    // Rounds alternate bare and relay so a busy moment on the machine hits both; the median round counts.
    const bareRounds: Figures[] = [];
    const relayRounds: Figures[] = [];
    for (let round = 0; round < rounds; round++) {
      bareRounds.push(await load(bare.port, path, body, total, concurrency));
      relayRounds.push(await load(relay.port, path, body, total, concurrency));
    }
    const bareFigures = median(bareRounds);
    const relayFigures = median(relayRounds);
    results[name] = { bare: bareFigures, relay: relayFigures, ratio: Math.round((relayFigures.rps / bareFigures.rps) * 100) / 100 };
  }
  for (const { child } of [upstream, bare, relay]) child.kill();

  const report = {
    benchmark: 'relay-proxy',
    date: new Date().toISOString(),
    node: process.version,
    requests_per_round: total,
    rounds,
    concurrency,
    cpus: availableParallelism(),
    target_ratio: 0.7,
    results,
  };
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/relay-proxy.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);

  const row = (cells: (string | number)[]) => cells.map((cell, i) => String(cell).padStart(i === 0 ? 26 : 10)).join(' ');
  console.log(`relay proxy vs bare pass-through: median of ${rounds} rounds of ${total} requests, concurrency ${concurrency}, loopback, ${availableParallelism()} CPUs`);
  console.log(row(['case', 'bare rps', 'relay rps', 'ratio', 'bare p50', 'relay p50', 'bare p99', 'relay p99', 'errors']));
  for (const [name, { bare: b, relay: r, ratio }] of Object.entries(results)) {
    console.log(row([name, b.rps, r.rps, `${ratio}${ratio >= 0.7 ? '' : ' (<0.7)'}`, `${b.p50_ms}ms`, `${r.p50_ms}ms`, `${b.p99_ms}ms`, `${r.p99_ms}ms`, b.errors + r.errors]));
  }
  console.log('figures written to bench/results/relay-proxy.json');
}

if (!isChild) await main();
