/**
 * The relay under test in the relay benches, as users run it: the built dist/ (run `npm run
 * build` first) on plain Node, without the TypeScript loader the other roles use, which would
 * add its own memory and CPU to the figures.
 *
 *   node bench/lib/relay-role.mjs <role> <upstream port> <options json>
 *
 * Roles:
 *  - relay  startRelay with `{ key, sites, trustProxy?, platformRate?, state?, handoff? }`
 *           (bench/collect.ts): SQLite state file, or Redis when BENCH_REDIS_URL is set, or the
 *           memory store when BENCH_RELAY_STATE=memory or `state: "memory"` (what the relay costs
 *           beside its outbox); one log line a request as by default (to /dev/null;
 *           BENCH_RELAY_LOG=off leaves them out); its deliverer sends what it accepts.
 *           `handoff: "none"` (collect.ts's ladder): accepted items go to a queue that takes
 *           them all and keeps nothing (the Workers Queues hand-off, `enqueue`), so there is no
 *           outbox and no deliverer: every check, identity, limit, answer and log line of /collect;
 *  - proxy  createProxyRoutes on @hono/node-server with createUndiciTransport, what the Node entry
 *           runs for `/v1/…` (bench/relay-proxy.ts), with `{ key, token }`;
 *  - entry  the whole Node entry (startRelay) with `{ key, token }` (bench/relay-proxy.ts).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveRole } from './children.js';

const [role, upstreamPort, json] = process.argv.slice(2);
const options = JSON.parse(json ?? '{}');
const baseUrl = `http://127.0.0.1:${upstreamPort}`;
const dist = (path) => {
  const url = new URL(`../../dist/${path}`, import.meta.url);
  if (!existsSync(url)) throw new Error('bench/lib/relay-role.mjs runs the built relay: run `npm run build` first');
  return import(url.href);
};
const tokens = async () => {
  const { hashToken } = await dist('relay/index.js');
  return [{ name: 'bench', sha256: await hashToken(options.token), scopes: ['admin'] }];
};

const roles = {
  async relay() {
    const { startRelay, createPinoLogger, gatheredLines } = await dist('relay/node.js');
    const redisUrl = process.env['BENCH_REDIS_URL'];
    const memory = (options.state ?? process.env['BENCH_RELAY_STATE']) === 'memory' || options.handoff === 'none';
    // Its state file (with its WAL, 10-20 MB a run) goes with the process.
    const dir = redisUrl || memory ? undefined : mkdtempSync(join(tmpdir(), 'cdp-bench-collect-'));
    if (dir !== undefined) process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    const relay = await startRelay({
      port: 0,
      // As `cdp-edge relay` runs it: the old generation's growth bounded (docs/deploy.md, "Memory").
      boundHeapGrowth: true,
      // One JSON line a request, as by default (RELAY_LOG=info), to /dev/null, gathered and written as
      // the relay writes stdout: a user's relay pays for making and writing its lines;
      // BENCH_RELAY_LOG=off leaves them out.
      logger: process.env['BENCH_RELAY_LOG'] === 'off' ? () => {} : createPinoLogger('info', gatheredLines('/dev/null')),
      ...(redisUrl && !memory ? { redisUrl } : dir === undefined ? {} : { stateFile: join(dir, 'relay-state.db') }),
      ...(options.handoff === 'none' ? { enqueue: async (items) => ({ taken: items.map((item) => item.id) }) } : {}),
      env: {
        CDP_API_KEY: options.key,
        CDP_BASE_URL: baseUrl,
        RELAY_SITES: JSON.stringify(options.sites),
        ...(options.trustProxy ? { RELAY_TRUST_PROXY: options.trustProxy } : {}),
        ...(options.platformRate ? { RELAY_PLATFORM_RATE: String(options.platformRate) } : {}),
      },
    });
    return relay.port;
  },
  async proxy() {
    const { serve } = await import('@hono/node-server');
    const { createProxyRoutes } = await dist('relay/index.js');
    const { createUndiciTransport } = await dist('relay/node.js');
    const proxy = createProxyRoutes({
      tokens: await tokens(),
      upstream: { baseUrl, apiKey: options.key },
      transport: createUndiciTransport(),
      logger: () => {},
    });
    return new Promise((resolve) => void serve({ fetch: proxy.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve(info.port)));
  },
  async entry() {
    const { startRelay } = await dist('relay/node.js');
    // As the CLI starts it: the Node entry picks its own transport (undici's pool).
    const env = { CDP_API_KEY: options.key, CDP_BASE_URL: baseUrl, RELAY_TOKENS: JSON.stringify(await tokens()), RELAY_LOG: 'off' };
    const relay = await startRelay({ port: 0, env });
    return relay.port;
  },
};

if (!(role in roles)) throw new Error(`unknown role ${role}: relay, proxy or entry`);
await serveRole(roles[role]);
