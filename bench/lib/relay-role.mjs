/**
 * The relay under test in bench/collect.ts, as `npx cdp-edge relay` runs it: the built dist/
 * (run `npm run build` first) on plain Node, without the TypeScript loader the other roles use,
 * which would add its own memory and CPU to the figures. SQLite state file, or Redis when
 * BENCH_REDIS_URL is set.
 *
 *   node bench/lib/relay-role.mjs <upstream port> <platform key> <RELAY_SITES json>
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveRole } from './children.js';

const [upstreamPort, platformKey, sites] = process.argv.slice(2);
const built = new URL('../../dist/relay/node.js', import.meta.url);
if (!existsSync(built)) throw new Error('bench/lib/relay-role.mjs runs the built relay: run `npm run build` first');
const { startRelay } = await import(built.href);

await serveRole(async () => {
  const redisUrl = process.env['BENCH_REDIS_URL'];
  const relay = await startRelay({
    port: 0,
    logger: () => {},
    ...(redisUrl ? { redisUrl } : { stateFile: join(mkdtempSync(join(tmpdir(), 'cdp-bench-collect-')), 'relay-state.db') }),
    env: { CDP_API_KEY: platformKey, CDP_BASE_URL: `http://127.0.0.1:${upstreamPort}`, RELAY_LOG: 'off', RELAY_SITES: sites },
  });
  return relay.port;
});
