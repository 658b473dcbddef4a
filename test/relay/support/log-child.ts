/**
 * A process that logs through the relay's own pino logger (node/log.ts) to its stdout, as the
 * relay does, or to the file named by its argument (`gatheredLines(file)`), and counts the writes
 * it makes to it on the way. It logs 200 request lines 1 ms apart, waits past the longest a line
 * may wait, says on stderr how many lines it logged and how many writes (and bytes) went out, then
 * logs 5 more lines and exits at once.
 *
 *   node --import tsx test/relay/support/log-child.ts [file]
 */
import fs from 'node:fs';
import { createPinoLogger, gatheredLines } from '../../../src/relay/node/log.js';

const file = process.argv[2];
let writes = 0;
let bytes = 0;
const write = fs.write;
// sonic-boom calls fs.write through the module's object at each write: counted here (a file's
// descriptor is its own, neither stdout's nor stderr's).
(fs as { write: unknown }).write = (...args: Parameters<typeof fs.write>) => {
  if (file === undefined ? args[0] === 1 : args[0] !== 1 && args[0] !== 2) {
    writes++;
    bytes += Buffer.byteLength(args[1] as string | Buffer);
  }
  return (write as (...rest: unknown[]) => void)(...args);
};

const logger = file === undefined ? createPinoLogger('info') : createPinoLogger('info', gatheredLines(file));
const line = (n: number) => ({
  ts: new Date().toISOString(),
  kind: 'collect',
  method: 'POST',
  path: '/collect',
  status: 200,
  ms: 1,
  site: 'shop',
  items: n,
  results: { accepted: n },
});
for (let n = 0; n < 200; n++) {
  logger(line(n));
  await new Promise((resolve) => setTimeout(resolve, 1));
}
// Five times the longest a line may wait (node/log.ts LINE_WAIT_MS, 100 ms).
await new Promise((resolve) => setTimeout(resolve, 500));
process.stderr.write(`${JSON.stringify({ logged: 200, writes, bytes })}\n`);
for (let n = 200; n < 205; n++) logger(line(n));
// What this process is for: an exit at once, with those five lines still waiting to be gathered.
// The test checks they reach stdout all the same (pino writes what waits, synchronously, at exit).
process.exit(0);
