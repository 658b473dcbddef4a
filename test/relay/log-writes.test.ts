/**
 * The Node relay's log lines on stdout (src/relay/node/log.ts) are written together, not one
 * asynchronous write each: below saturation every request's line was a trip to libuv's thread
 * pool and one more turn of the event loop. None is held back for long, none is lost at exit, and
 * they keep their order. The lines come from a process of their own
 * (test/relay/support/log-child.ts), which counts its writes to stdout; what the lines waiting
 * allocate is counted in this process.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { countAllocations } from '../../bench/lib/gc-count.js';
import { createPinoLogger, gatheredLines } from '../../src/relay/node/log.js';

const root = join(import.meta.dirname, '..', '..');
const tsx = pathToFileURL(join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const child = join(import.meta.dirname, 'support', 'log-child.ts');

/** What log-child.ts wrote (to stdout, or to `file` when given) and what it counted on stderr. */
async function runChild(file?: string) {
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', tsx, child, ...(file === undefined ? [] : [file])], {
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  return { stdout: file === undefined ? stdout : readFileSync(file, 'utf8'), stderr };
}

it('writes 200 request lines 1 ms apart in a few writes, each within its wait, the last ones at exit, in order', async () => {
  expectGathered(await runChild());
}, 30_000);

// What the relay benches' relay logs to (bench/lib/relay-role.mjs), as a user's relay logs to stdout.
it('writes them to a file the same way (gatheredLines with a path)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-log-writes-'));
  try {
    expectGathered(await runChild(join(dir, 'relay.log')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 30_000);

function expectGathered({ stdout, stderr }: { stdout: string; stderr: string }) {
  const { logged, writes, bytes } = JSON.parse(stderr.trim().split('\n').at(-1)!) as { logged: number; writes: number; bytes: number };
  // Before: one write a line that found no write under way (about 200 here).
  expect(logged).toBe(200);
  expect(writes).toBeGreaterThan(0);
  expect(writes).toBeLessThanOrEqual(20);
  const lines = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { level: string; items: number });
  // Every line, the 5 logged right before exit too, in order; the 200 were all written before
  // the count (none waited past its wait), the 5 by the exit.
  expect(lines.map((line) => line.items)).toEqual(Array.from({ length: 205 }, (_, n) => n));
  expect(bytes).toBe(Buffer.byteLength(stdout.split('\n').slice(0, 200).join('\n')) + 1);
  expect(new Set(lines.map((line) => line.level))).toEqual(new Set(['info']));
}

// Lines kept as text joined the text that waits, and sonic-boom measured that text's UTF-8 length at
// every line: V8 copied it whole each time, about half of LINES_GATHERED allocated a line.
it('keeps the lines that wait without copying them all again at each line', async () => {
  const logger = createPinoLogger('info', gatheredLines('/dev/null'));
  const line = (n: number) => ({ ts: new Date().toISOString(), kind: 'collect', method: 'POST', path: '/collect', status: 200, ms: 1, site: 'shop', items: n });
  // Bursts of 40 lines a turn of the event loop, as requests at saturation log them.
  const bursts = async (count: number) => {
    for (let burst = 0; burst < count; burst++) {
      for (let n = 0; n < 40; n++) logger(line(n));
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  await bursts(50);
  const counted = countAllocations();
  await bursts(250);
  const perLine = counted().bytes / 10_000;
  // Making, scrubbing and serialising a line, the bursts' own turns: about 2.3 kB here on Node 22;
  // 7.5–8.6 kB with the lines kept as text.
  expect(perLine).toBeLessThan(4_000);
});

it('writes each line as its level then its fields, one JSON text a line whatever its strings hold', () => {
  const written: string[] = [];
  const logger = createPinoLogger('info', { write: (text: string) => void written.push(text) } as Parameters<typeof createPinoLogger>[1]);
  logger({ ts: 't', kind: 'collect', method: 'POST', path: '/collect', status: 200, ms: 1.5, site: 'shop', items: 2, results: { accepted: 2 } });
  logger({ level: 'debug', ts: 't', method: 'POST', path: '/collect', status: 200, ms: 0 });
  logger({ level: 'error', ts: 't', method: 'GET', path: '/a\ud800"\n', status: 500, ms: Number.NaN, upstream: [200, 0] });
  expect(written).toEqual([
    '{"level":"info","ts":"t","kind":"collect","method":"POST","path":"/collect","status":200,"ms":1.5,"site":"shop","items":2,"results":{"accepted":2}}\n',
    // A lone surrogate is escaped, never written as bytes that are not UTF-8.
    '{"level":"error","ts":"t","method":"GET","path":"/a\\ud800\\"\\n","status":500,"ms":null,"upstream":[200,0]}\n',
  ]);
});
