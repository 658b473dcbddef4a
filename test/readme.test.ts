// README.md as a new user follows it: every fenced block is run (or, where it needs the outside
// world, mirrored against what the repository really has). Blocks for the browser (html, js)
// run in Chromium in test/e2e/demo-readme.test.ts.
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../src/client/index.js';
import { startEmulator, type RunningEmulator } from '../src/emulator/node.js';
import { startRelay, type RunningRelay } from '../src/relay/node.js';
import { createToken, parseTokens } from '../src/relay/core/tokens.js';
import { createIdentity } from '../src/relay/ingest/identity.js';
import { readmeBlocks, type Block } from './readme-blocks.js';

const root = join(import.meta.dirname, '..');
const bin = join(root, 'bin', 'cdp-edge.js');
const tsx = pathToFileURL(join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; scripts: Record<string, string> };
const wrangler = readFileSync(join(root, 'wrangler.toml'), 'utf8');
const blocks = readmeBlocks();
const KEY = 'dev-key';
const SECRET = 'readme-identity-secret-0123456789';

interface Proc {
  out(): string;
  exit: Promise<number | null>;
  stop(): void;
  /** resolves when `pattern` appears in the output */
  waitFor(pattern: RegExp): Promise<RegExpExecArray>;
}

function run(command: string, args: string[], env: Record<string, string>, cwd = root): Proc {
  const child = spawn(command, args, { cwd, env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    out += chunk;
    for (const fn of listeners) fn();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    out: () => out,
    exit,
    stop: () => void child.kill('SIGINT'),
    waitFor: (pattern) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`waited 30 s for ${pattern}:\n${out}`)), 30_000);
        const check = () => {
          const match = pattern.exec(out);
          if (!match) return;
          clearTimeout(timer);
          listeners.delete(check);
          resolve(match);
        };
        listeners.add(check);
        check();
        void exit.then(() =>
          setTimeout(() => {
            clearTimeout(timer);
            reject(new Error(`exited before ${pattern}:\n${out}`));
          }, 50),
        );
      }),
  };
}

/** Splits a shell line into words (quotes '…' and "…", no expansions), dropping a trailing # comment. */
function words(line: string): string[] {
  const out: string[] = [];
  let word: string | undefined;
  let quote: string | undefined;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = undefined;
      else word += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      word ??= '';
    } else if (/\s/.test(ch)) {
      if (word !== undefined) {
        out.push(word);
        word = undefined;
      }
    } else if (ch === '#' && word === undefined) {
      break;
    } else {
      word = (word ?? '') + ch;
    }
  }
  if (quote) throw new Error(`unclosed ${quote} in: ${line}`);
  if (word !== undefined) out.push(word);
  return out;
}

let emulator: RunningEmulator;
let relay: RunningRelay;
let readWriteToken: string;
let collectToken: string;
beforeAll(async () => {
  emulator = await startEmulator({ port: 0, key: KEY });
  const made = await createToken({ name: 'readme', scopes: ['read', 'write'] });
  readWriteToken = made.token;
  const collect = await createToken({ name: 'shop', scopes: ['collect'] });
  collectToken = collect.token;
  relay = await startRelay({
    port: 0,
    logger: () => {},
    env: {
      CDP_API_KEY: KEY,
      CDP_BASE_URL: emulator.url,
      RELAY_SITES: JSON.stringify([{ key: 'pk_live_123', origins: ['https://www.example.com'] }]),
      RELAY_TOKENS: JSON.stringify([made.entry, collect.entry]),
      RELAY_IDENTITY_SECRET: SECRET,
      RELAY_DELIVERY_WAIT_MS: '0',
    },
  });
});
afterAll(async () => {
  await relay?.close();
  await emulator?.close();
});

/** Writes a TypeScript block (with `extra` lines after it) into the package and runs it with tsx. */
async function runTs(block: Block, extra: string, env: Record<string, string> = {}, prelude = ''): Promise<string> {
  const dir = join(root, 'test-results', 'readme');
  mkdirSync(dir, { recursive: true });
  // Inside the package, so `cdp-edge/...` resolves to the build through the exports map.
  const file = join(dir, `block-${block.line}.mts`);
  const code = block.code.replaceAll('https://t.example.com', relay.url);
  writeFileSync(file, `${prelude}\n${code}\n${extra}\n`);
  const proc = run(process.execPath, ['--import', tsx, file], env);
  const code_ = await proc.exit;
  expect(code_, `README.md:${block.line} exited ${code_}:\n${proc.out()}`).toBe(0);
  return proc.out();
}

/** Runs one command line of a `sh` block; `env` collects `export`s. */
async function shell(line: string, env: Record<string, string>, block: Block): Promise<void> {
  const argv = words(line);
  if (argv.length === 0) return;
  const where = `README.md:${block.line}: ${line}`;
  const [cmd, ...args] = argv;
  if (cmd === 'export') {
    for (const assignment of args) {
      const eq = assignment.indexOf('=');
      // The emulator of the README runs on 8790; here it is wherever port 0 put it.
      env[assignment.slice(0, eq)] = assignment.slice(eq + 1).replace('http://127.0.0.1:8790', emulator.url);
    }
    return;
  }
  if (line.startsWith('npm install && npm start')) {
    // npm start = build, then `cdp-edge dev`; run that on free ports (the defaults may be taken here).
    expect(pkg.scripts['prestart']).toBe('npm run build');
    expect(pkg.scripts['start']).toBe('node bin/cdp-edge.js dev');
    const dev = run(process.execPath, [bin, 'dev', '--demo-port', '0', '--relay-port', '0', '--emulator-port', '0', '--quiet'], {});
    const [, demo] = await dev.waitFor(/Demo site\s+(http:\/\/\S+?)\/?\s/);
    await dev.waitFor(/Press Ctrl-C/);
    expect((await fetch(`${demo}/`)).status).toBe(200);
    dev.stop();
    expect(await dev.exit).toBe(0);
    return;
  }
  if (line.startsWith('npm test')) {
    // Not run from inside `npm test`; what it runs is checked instead.
    // The type check and Biome side by side (run-p) with the build, then the tests, which load dist/.
    expect(pkg.scripts['test']).toBe('run-p typecheck lint test:run');
    expect(pkg.scripts['test:run']).toBe('npm run build && vitest run');
    return;
  }
  if (cmd === 'npm' && args.join(' ') === 'install cdp-edge') return void expect(pkg.name).toBe('cdp-edge');
  if (cmd === 'npx' && args[0] === 'wrangler') {
    // Offline: check that wrangler.toml has what the command relies on.
    if (args[1] === 'secret' && args[2] === 'put') {
      expect(wrangler, where).toMatch(new RegExp(`secret put ${args[3]}\\b`));
      expect(['CDP_API_KEY', 'RELAY_IDENTITY_SECRET']).toContain(args[3]);
      return;
    }
    if (args[1] === 'deploy') {
      const main = /^main = "node_modules\/cdp-edge\/(.+)"$/m.exec(wrangler)?.[1];
      expect(main && existsSync(join(root, main)), `${where}: wrangler.toml main must be a built file`).toBe(true);
      expect(wrangler).toMatch(/\[\[durable_objects\.bindings\]\]\s*\nname = "RELAY_STATE"\s*\nclass_name = "RelayState"/);
      expect(wrangler).toMatch(/new_sqlite_classes = \["RelayState"\]/);
      return;
    }
  }
  if (cmd === 'npx' && args[0] === 'cdp-edge') {
    const cliArgs = args.slice(1).map((arg, i, all) => (all[i - 1] === '--port' || all[i - 1] === '--metrics-port' ? '0' : arg));
    const cwd = mkdtempSync(join(tmpdir(), 'cdp-readme-'));
    const proc = run(process.execPath, [bin, ...cliArgs], { ...env, RELAY_LOG: 'off' }, cwd);
    if (args[1] === 'relay' || args[1] === 'emulator') {
      const [, url] = await proc.waitFor(/listening on (http:\/\/[^\s(]+)/);
      if (args[1] === 'relay') {
        expect(await (await fetch(`${url}/healthz`)).json()).toMatchObject({ ok: true });
        // The site of the README's RELAY_SITES is there: its origin may post, others may not.
        const collect = (origin: string) =>
          fetch(`${url}/collect`, {
            method: 'POST',
            headers: { origin, 'content-type': 'text/plain' },
            body: JSON.stringify({ key: 'pk_live_123', batch: [] }),
          });
        expect((await collect('https://evil.example.org')).status).toBe(403);
        expect((await collect('https://www.example.com')).status).not.toBe(403);
        if (args.includes('--metrics-port')) {
          // The scrape example points where the command put the metrics port.
          const port = args[args.indexOf('--metrics-port') + 1];
          expect(blocks.find((b) => b.lang === 'yaml')?.code).toContain(`'127.0.0.1:${port}'`);
          const [, metrics] = await proc.waitFor(/metrics on (http:\/\/\S+)\/metrics/);
          const scrape = await (await fetch(`${metrics}/metrics`)).text();
          expect(scrape).toContain('cdp_edge_collect_requests_total{site="pk_live_123",status="403"} 1');
          expect((await fetch(`${metrics}/status`)).status).toBe(200);
        }
      } else {
        const answer = await fetch(`${url}/v1/tags/get`, {
          method: 'POST',
          headers: { 'x-api-key': 'dev-key', 'content-type': 'application/json' },
          body: '{}',
        });
        expect(answer.status).toBe(200);
        expect((await fetch(`${url}/`)).status).toBe(200);
      }
      proc.stop();
      expect(await proc.exit, proc.out()).toBe(0);
      return;
    }
    expect(await proc.exit, `${where}\n${proc.out()}`).toBe(0);
    if (args[1] === 'token') {
      const token = /^\s+(rt_\S+)$/m.exec(proc.out())?.[1];
      const entry = /^\s+(\{"name".*\})$/m.exec(proc.out())?.[1];
      expect(token).toBeDefined();
      const [parsed] = parseTokens(`[${entry}]`);
      expect(parsed).toMatchObject({ name: 'crm-sync', scopes: ['read', 'write'] });
    }
    return;
  }
  throw new Error(`${where}: no test knows this command; add one to test/readme.test.ts`);
}

describe('README.md', () => {
  it('has only blocks that a test runs: sh, ts, text here; html and js in Chromium; jsx in React', () => {
    expect(blocks.length).toBeGreaterThan(8);
    for (const block of blocks) expect(['sh', 'ts', 'text', 'html', 'js', 'yaml', 'sql', 'jsx'], `README.md:${block.line}`).toContain(block.lang);
    expect(existsSync(join(root, 'test', 'e2e', 'demo-readme.test.ts'))).toBe(true);
    expect(existsSync(join(root, 'test', 'browser', 'react-readme.test.ts'))).toBe(true);
  });

  it('the diagram names real routes', async () => {
    const diagram = blocks.find((b) => b.lang === 'text')!;
    for (const path of ['/v1/person/merge', '/v1/activities/create']) expect(diagram.code).toContain(path);
    const { ENDPOINT_LIST } = await import('../src/api/index.js');
    expect(ENDPOINT_LIST.map((e: { path: string }) => e.path)).toEqual(expect.arrayContaining(['/v1/person/merge', '/v1/activities/create']));
    expect((await fetch(`${relay.url}/collect`, { method: 'POST', body: '{}' })).status).toBe(400); // the route exists
  });

  it('every shell command works as written (ports become free ones; wrangler is checked offline)', async () => {
    // One shell for the whole README: what an earlier block exports, a later one has.
    const env: Record<string, string> = {};
    for (const block of blocks.filter((b) => b.lang === 'sh')) {
      for (const line of block.code.split('\n')) await shell(line, env, block);
    }
  }, 120_000);

  it('the user_hash example computes what the relay checks', async () => {
    const block = blocks.find((b) => b.lang === 'ts' && b.code.includes('identityHash'))!;
    const out = await runTs(block, 'console.log(userHash);', { RELAY_IDENTITY_SECRET: SECRET });
    expect(out.trim()).toBe(createHmac('sha256', SECRET).update('str::email\nann@example.com').digest('hex'));
    expect(await createIdentity(SECRET, 60).proves('str::email', 'ann@example.com', out.trim())).toBe(true);
  });

  it('the Worker entry exports the fetch handler and the Durable Object classes, and nothing else', async () => {
    const block = blocks.find((b) => b.lang === 'ts' && b.code.includes('cdp-edge/relay/cloudflare'))!;
    // The entry imports `cloudflare:workers`, which only workerd has: check what the built module exports
    // (test/deploy starts it with wrangler). workerd refuses a main module with any other export.
    expect(block.code).toContain("export { default, RelayState, RelayOutbox } from 'cdp-edge/relay/cloudflare';");
    const built = readFileSync(join(root, 'dist', 'relay', 'cloudflare.js'), 'utf8');
    const exported = [...built.matchAll(/^export \{([^}]*)\}/gm)].flatMap((m) => m[1]!.split(',').map((name) => name.trim().split(' as ').pop()));
    expect(exported.sort()).toEqual(['RelayOutbox', 'RelayState', 'default']);
    expect(built).not.toMatch(/^export (const|let|var|function|class|default) /m);
  });

  it('the typed client example merges and pages through the relay with a token', async () => {
    const block = blocks.find((b) => b.lang === 'ts' && b.code.includes("from 'cdp-edge/client'") && b.code.includes('RELAY_TOKEN'))!;
    const out = await runTs(block, '', { RELAY_TOKEN: readWriteToken });
    expect(out).toMatch(/^[0-9a-f]{24} ann@example\.com$/m);
    const client = createClient({ apiKey: KEY, baseUrl: emulator.url });
    const found = await client.person.get({ filter: { '$str::is': { field_id: 'str::email', value: 'ann@example.com' } }, fields: ['str::first'] });
    expect(found.contacts?.[0]?.fields).toEqual({ 'str::first': 'Ann' });
  });

  it('the server-side tracking examples run: the webhook person lands (the block run twice), the spool is empty once flushed', async () => {
    const definition = await fetch(`${emulator.url}/v1/definitions/activity/create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY },
      body: JSON.stringify({ name: 'order-paid', attributes: [{ name: 'plan', display_type: 'text' }] }),
    });
    expect(definition.ok).toBe(true);
    const [tracking, spooled] = blocks.filter((b) => b.lang === 'ts' && b.code.includes('cdp-edge/server'));
    // What the webhook handler and the platform give the block.
    const prelude = (email: string) =>
      `const event = { id: 'evt_readme_${email}' }; const email = '${email}'; const row = { id: 7, version: 1 }; const waited: Promise<unknown>[] = []; const ctx = { waitUntil: (p: Promise<unknown>) => void waited.push(p) };`;
    await runTs(tracking!, 'await Promise.all(waited);', { RELAY_COLLECT_TOKEN: collectToken }, prelude('server@example.com'));
    // Run twice, as a retried webhook would: the same event id lands once.
    await runTs(tracking!, 'await Promise.all(waited);', { RELAY_COLLECT_TOKEN: collectToken }, prelude('server@example.com'));
    const spool = join(mkdtempSync(join(tmpdir(), 'cdp-readme-spool-')), 'spool.db');
    const left = await runTs(
      { ...spooled!, code: spooled!.code.replace('.cdp-edge/spool.db', spool) },
      `const paid = await cdp.track({ id: 'spooled-1', activity_id: 'act:cm:order-paid', person: { 'str::email': 'spool@example.com' } });
await cdp.flush();
console.log(paid.status, JSON.stringify(await sqliteSpool(${JSON.stringify(spool)}).load()));`,
      {},
      `const relay = '${relay.url}'; const token = '${collectToken}';`,
    );
    expect(left.trim()).toBe('accepted []');
    await relay.drained({ timeoutMs: 10_000 });
    expect(await relay.outbox.deadLetters()).toEqual([]);
    expect((await relay.outbox.stats()).pending).toBe(0);
    const client = createClient({ apiKey: KEY, baseUrl: emulator.url });
    const found = await client.person.get({ filter: { '$str::is': { field_id: 'str::email', value: 'server@example.com' } }, fields: ['str::first', 'tags'] });
    expect(found.contacts?.[0]?.fields).toMatchObject({ 'str::first': 'Ann', tags: ['customer'] });
  });

  it('the emulator example runs as a test would use it', async () => {
    const block = blocks.find((b) => b.lang === 'ts' && b.code.includes("from 'cdp-edge/emulator'"))!;
    expect((await runTs(block, '')).trim()).toBe('1');
  });

  it('the size comparison quotes bench/results/size.json, cdp.js included', () => {
    const results = JSON.parse(readFileSync(join(root, 'bench', 'results', 'size.json'), 'utf8')) as {
      rows: Array<{ name: string; script: { gzip: number } }>;
    };
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const rows = [...readme.matchAll(/^\| ([A-Za-z][^|]*?) *\| ([\d.]+) KB *\|/gm)];
    expect(rows.length).toBe(8);
    for (const [, name, kb] of rows) {
      const row = results.rows.find((r) => name!.startsWith(r.name));
      expect(row, name).toBeDefined();
      expect(Number(kb), name).toBe(Math.round(row!.script.gzip / 100) / 10);
    }
    // The prose quotes the bytes of the same results, and they are what the build makes now.
    const ours = results.rows.find((r) => r.name === 'cdp-edge')!.script.gzip;
    expect(readme).toContain(`\`dist/cdp.js\` is ${(Math.round(ours / 100) / 10).toFixed(1)} KB gzip (${ours.toLocaleString('en')} B,`);
    expect(gzipSync(readFileSync(join(root, 'dist', 'cdp.js')), { level: 9 }).length).toBe(ours);
  });

  it('the framework entries quote bench/results/size.json', () => {
    const { entries } = JSON.parse(readFileSync(join(root, 'bench', 'results', 'size.json'), 'utf8')) as {
      entries: Array<{ entry: string; adds: { gzip: number }; app: { gzip: number } }>;
    };
    const readme = readFileSync(join(root, 'README.md'), 'utf8').replace(/\s+/g, ' ');
    const kb = (bytes: number) => `${(Math.round(bytes / 100) / 10).toFixed(1)} KB gzip (${bytes.toLocaleString('en')} B)`;
    const react = entries.find((e) => e.entry === 'cdp-edge/react')!;
    expect(readme).toContain(`\`cdp-edge/react\` adds ${kb(react.adds.gzip)} beside \`cdp-edge/browser\``);
    expect(readme).toContain(`is ${kb(react.app.gzip)} without React itself`);
    const server = entries.find((e) => e.entry === 'cdp-edge/server')!;
    expect(readme).toContain(`a function that tracks one event with it bundles ${kb(server.app.gzip)} of cdp-edge`);
  });

  it("the consent adapters' table quotes bench/results/size.json", () => {
    const { consent } = JSON.parse(readFileSync(join(root, 'bench', 'results', 'size.json'), 'utf8')) as {
      consent: { adapters: Array<{ platform: string; gzip: number }>; script: { gzip: number } };
    };
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const row = (start: string, bytes: number) =>
      new RegExp(`\\| ${start.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[^\\n]*\\| ${bytes.toLocaleString('en')} B \\|`);
    expect(consent.adapters).toHaveLength(4);
    for (const { platform, gzip } of consent.adapters) expect(readme).toMatch(row(`${platform}:`, gzip));
    expect(readme).toMatch(row('all four for a script tag:', consent.script.gzip));
  });

  it('the scale table quotes bench/results/state.json', () => {
    const state = JSON.parse(readFileSync(join(root, 'bench', 'results', 'state.json'), 'utf8')) as {
      sqlite: { at_peak: { megabytes: number; reopen_ms: number } };
      throughput: { store: string; pairs_per_second: number }[];
    };
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const rate = (store: string) => (Math.round(state.throughput.find((row) => row.store === store)!.pairs_per_second / 100) * 100).toLocaleString('en');
    expect(readme).toMatch(new RegExp(`\\| Node, SQLite, per process +\\| about ${rate('SQLite')} `));
    expect(readme).toMatch(new RegExp(`\\| Node, Redis, per connection +\\| about ${rate('Redis')} `));
    expect(readme).toContain(`the SQLite file is ${state.sqlite.at_peak.megabytes} MB and reopens in ${state.sqlite.at_peak.reopen_ms} ms`);
  });

  it('the first-party path setup it describes works: /t/collect and /t/cdp.js', async () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme).toContain('set `RELAY_COLLECT_PATH=/t/collect` and `RELAY_SCRIPT_PATH=/t/cdp.js`');
    const pathRelay = await startRelay({
      port: 0,
      logger: () => {},
      env: {
        CDP_API_KEY: KEY,
        CDP_BASE_URL: emulator.url,
        RELAY_COLLECT_PATH: '/t/collect',
        RELAY_SCRIPT_PATH: '/t/cdp.js',
        RELAY_SITES: JSON.stringify([{ key: 'pk_live_123', origins: ['https://www.example.com'] }]),
      },
    });
    try {
      expect((await fetch(`${pathRelay.url}/t/cdp.js`)).status).toBe(200);
      const answer = await fetch(`${pathRelay.url}/t/collect`, {
        method: 'POST',
        headers: { origin: 'https://www.example.com', 'content-type': 'text/plain' },
        body: JSON.stringify({ key: 'pk_live_123', batch: [] }),
      });
      expect(answer.status).toBe(200);
    } finally {
      await pathRelay.close();
    }
  });

  it('the Analytics Engine query reads the columns the Worker writes', async () => {
    const { COLLECT_DOUBLES } = await import('../src/relay/workers/analytics.js');
    const [items, errors] = blocks.filter((b) => b.lang === 'sql').map((b) => b.code);
    const columns = [...items!.matchAll(/SUM\(_sample_interval \* double(\d+)\) AS (\w+)/g)].map(([, n, name]) => [Number(n), name] as const);
    expect(columns.length).toBeGreaterThan(3);
    for (const [n, name] of columns) expect([n, name]).toEqual([n, n === 1 ? 'requests' : COLLECT_DOUBLES[n - 4]]);
    // The error rates: failed requests (status in double3) over requests, rejected (double7) over items (double4).
    expect(COLLECT_DOUBLES[7 - 4]).toBe('rejected');
    expect(errors).toContain('sumIf(_sample_interval, double3 >= 400) / SUM(_sample_interval * double1) AS request_error_rate');
    expect(errors).toContain('SUM(_sample_interval * double7) / SUM(_sample_interval * double4) AS item_rejection_rate');
    for (const sql of [items, errors]) expect(sql).toContain("blob1 = 'collect'");
    expect(wrangler).toMatch(/^# \[\[analytics_engine_datasets\]\]\n# binding = "ANALYTICS"/m);
  });

  it('every Next.js block is what demo/next has (which test/next/next.test.ts builds and runs)', () => {
    const next = blocks.filter((b) => b.lang === 'jsx' && /^\/\/ (next\.config\.mjs|app\/\S+)$/.test(b.code.split('\n')[0]!));
    expect(next.length).toBeGreaterThanOrEqual(3);
    for (const block of next) {
      const [first, ...lines] = block.code.split('\n');
      const file = readFileSync(join(root, 'demo', 'next', first!.slice(3)), 'utf8');
      for (const line of lines) expect(file, `README.md:${block.line} ${line}`).toContain(line);
    }
  });

  it('every ts block is one of the above', () => {
    const known = ['identityHash', 'cdp-edge/relay/cloudflare', 'RELAY_TOKEN', "from 'cdp-edge/emulator'", 'cdp-edge/server'];
    for (const block of blocks.filter((b) => b.lang === 'ts'))
      expect(
        known.some((k) => block.code.includes(k)),
        `README.md:${block.line}`,
      ).toBe(true);
  });
});
