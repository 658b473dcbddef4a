/**
 * Benchmark: how many concurrent connections one relay process holds while `/collect` still
 * answers, and that idle ones are reaped.
 *
 *   npm run build && npx tsx bench/connections.ts [--max 16000] [--step 1000]
 *
 * Starts the built `cdp-edge emulator` and `cdp-edge relay` (default configuration, memory state,
 * `RELAY_LOG=off`, no cap per address: every connection comes from loopback), then opens idle TCP connections to the relay in steps of `--step`; after each
 * step one visitor posts a one-item `/collect` and its status and time are recorded. It stops at
 * `--max`, at the first connection the relay refuses, or at the first `/collect` that fails. Then
 * it counts how long the relay takes to close them all (its idle deadline is 10 s), up to 60 s.
 * The relay's file-descriptor limit (`ulimit -n`, inherited) bounds the figure: it is printed.
 * Writes bench/results/connections.json.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCli } from './lib/cli.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
};
const MAX = arg('max', 16_000);
const STEP = arg('step', 1_000);
const KEY = 'bench-connections-key';
const ORIGIN = 'https://shop.example.com';

const fdLimit = Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim());
const emulator = await startCli(['emulator', '--port', '0', '--key', KEY]);
await fetch(`${emulator.url}/v1/definitions/activity/create`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-api-key': KEY },
  body: JSON.stringify({ name: 'viewed', attributes: [] }),
});
const relay = await startCli(['relay', '--port', '0'], {
  CDP_API_KEY: KEY,
  CDP_BASE_URL: emulator.url,
  RELAY_SITES: JSON.stringify([{ key: 'pk_bench', origins: [ORIGIN], verify: 'open' }]),
  RELAY_LOG: 'off',
  // Every connection here comes from loopback: the per-address cap would stop the count at its value.
  RELAY_MAX_CONNECTIONS_PER_ADDRESS: '1000000',
});
const { hostname, port } = new URL(relay.url);

const sockets: Socket[] = [];
let closedByRelay = 0;
const open = () =>
  new Promise<boolean>((resolve) => {
    const socket = connect(Number(port), hostname, () => resolve(true));
    socket.once('error', () => resolve(false));
    socket.once('close', () => closedByRelay++);
    sockets.push(socket);
  });

const steps: { connections: number; collectStatus: number; collectMs: number }[] = [];
let refused = false;
let n = 0;
for (let i = 0; i < 1_000_000 && n < MAX && !refused; i++) {
  const opened = await Promise.all(Array.from({ length: Math.min(STEP, MAX - n) }, open));
  n += opened.filter(Boolean).length;
  refused = opened.some((ok) => !ok);
  const started = performance.now();
  let status = 0;
  try {
    const response = await fetch(`${relay.url}/collect`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', origin: ORIGIN },
      body: JSON.stringify({
        key: 'pk_bench',
        batch: [{ id: `c-${n}`, type: 'track', activity_id: 'act:cm:viewed', person: { 'str::email': 'c@example.com' } }],
      }),
      signal: AbortSignal.timeout(5_000),
    });
    status = response.status;
    await response.body?.cancel();
  } catch {
    status = 0;
  }
  steps.push({ connections: n, collectStatus: status, collectMs: Math.round(performance.now() - started) });
  console.log(`${n} idle connections: /collect ${status} in ${steps.at(-1)!.collectMs} ms`);
  if (status !== 200) break;
}
const held = steps.filter((step) => step.collectStatus === 200).at(-1)?.connections ?? 0;
const waitStarted = Date.now();
while (closedByRelay < sockets.length && Date.now() - waitStarted < 60_000) await new Promise((resolve) => setTimeout(resolve, 100));
const reaped = closedByRelay;
const reapedMs = Date.now() - waitStarted;
for (const socket of sockets) socket.destroy();
await relay.stop();
await emulator.stop();

const result = { date: new Date().toISOString(), fdLimit, held, refused, opened: sockets.length, reaped, reapedMs, steps };
console.log(
  `held ${held} idle connections with /collect answering (fd limit ${fdLimit}); ${reaped} of ${sockets.length} closed by the relay ${reapedMs} ms after the last step`,
);
mkdirSync(join(root, 'bench/results'), { recursive: true });
writeFileSync(join(root, 'bench/results/connections.json'), `${JSON.stringify(result, null, 2)}\n`);
