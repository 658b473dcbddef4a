/**
 * Shared by the fuzz suites: the seed and run count (reproducible, printed), raw HTTP on
 * loopback (no client-side path normalisation, any bytes, any header), the two documented
 * error shapes, a heap probe after GC, and the case counter bench/run.js reads.
 */
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect } from 'vitest';

/** `FUZZ_SEED` reproduces a run; npm test uses a fixed seed so it is the same run every time. */
export const SEED = Number(process.env['FUZZ_SEED'] ?? 20261123);
/** fast-check runs per property: 150 in npm test, more when the bench sets `FUZZ_RUNS`. */
export const RUNS = Math.max(1, Number(process.env['FUZZ_RUNS'] ?? 150));

/** Per-test time for the property tests: they scale with RUNS. */
export const TIMEOUT = 20_000 + RUNS * 60;

export const fcOptions = (salt: number) => ({ seed: SEED + salt, numRuns: RUNS, endOnFailure: true });

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 8 });

const quieted = new WeakSet<Socket>();
/** EPIPE after an early answer is expected; one module-level listener per socket (a per-request closure would pin each body to the kept-alive socket). */
function quietOnce(socket: Socket): void {
  if (quieted.has(socket)) return;
  quieted.add(socket);
  socket.on('error', ignore);
}
const ignore = () => {};

/** One request exactly as given: path unnormalised, body any bytes. */
export function send(base: string, method: string, path: string, headers: Record<string, string>, body?: string | Uint8Array, reuse = true): Promise<Reply> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    let replied = false;
    // Bytes, not strings: node:http keeps written strings alive past the request on a kept-alive socket,
    // which would read as a leak of the server under test.
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    const large = bytes !== undefined && bytes.byteLength > 1024 * 1024;
    const length = bytes === undefined ? {} : { 'content-length': String(bytes.byteLength) };
    // Large bodies on their own connection: the server may answer early and drop it.
    const req = request(
      { host: url.hostname, port: url.port, method, path, headers: { ...length, ...headers }, agent: large || !reuse ? false : agent },
      (res) => {
        replied = true;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    // A server may answer 413 and close before a large body is written: the answer is what counts.
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (replied) return;
      // A kept-alive socket the server closed as idle while this process was busy (fast-check
      // generating for seconds under load): the request never reached it; send it again, once.
      if (req.reusedSocket && error.code === 'ECONNRESET') resolve(send(base, method, path, headers, bytes, false));
      else reject(error);
    });
    req.on('socket', quietOnce);
    req.setTimeout(15_000, () => req.destroy(new Error(`no answer to ${method} ${path} within 15 s`)));
    if (bytes !== undefined) req.write(bytes);
    req.end();
  });
}

/** Bytes on a fresh socket, for what node:http refuses to send (CR/LF in headers, smuggling). Resolves the status line's code. */
export function sendRaw(base: string, bytes: string): Promise<{ status: number; text: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let text = '';
    const timer = setTimeout(() => socket.destroy(new Error('no answer within 10 s')), 10_000);
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      if (text) resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text });
      else reject(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text });
    });
    socket.write(bytes, 'latin1');
    // The server answers and closes (or keeps alive); stop reading once an answer is complete.
    setTimeout(() => socket.end(), 300);
  });
}

const SNAKE = /^[a-z][a-z0-9_]*$/;

/** The relay's documented error: `{"error":{"code","message","details"}}` with a 4xx status. */
export function expectRelayError(reply: Reply, statuses?: number[]): { code: string; message: string } {
  const context = `${reply.status} ${reply.text.slice(0, 300)}`;
  expect(reply.status, context).toBeGreaterThanOrEqual(400);
  expect(reply.status, context).toBeLessThan(500);
  if (statuses) expect(statuses, context).toContain(reply.status);
  expect(String(reply.headers['content-type']), context).toMatch(/^application\/json/);
  const body = JSON.parse(reply.text) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
  expect(Object.keys(body), context).toEqual(['error']);
  expect(body.error?.code, context).toMatch(SNAKE);
  expect(typeof body.error?.message === 'string' && body.error.message.length > 10, context).toBe(true);
  expect(Array.isArray(body.error?.details), context).toBe(true);
  return body.error as { code: string; message: string };
}

/** The emulator's (the platform's) general error: `{request_id, code, error, details?}`, `code` = the status. */
export function expectEmulatorError(reply: Reply, statuses?: number[]): void {
  const context = `${reply.status} ${reply.text.slice(0, 300)}`;
  expect(reply.status, context).toBeGreaterThanOrEqual(400);
  expect(reply.status, context).toBeLessThan(500);
  if (statuses) expect(statuses, context).toContain(reply.status);
  expect(String(reply.headers['content-type']), context).toMatch(/^application\/json/);
  const body = JSON.parse(reply.text) as Record<string, unknown>;
  expect(typeof body['request_id'], context).toBe('string');
  expect(body['code'], context).toBe(reply.status);
  expect(typeof body['error'] === 'string' && (body['error'] as string).length > 0, context).toBe(true);
}

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** Lets closing sockets finish, so the heap is measured between requests, not inside one. */
export const settle = () => new Promise((resolve) => setTimeout(resolve, 250));

/** Heap in use after two full collections. */
export function heapAfterGc(): number {
  collectGarbage();
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

/**
 * Heap growth over the second of two identical passes: the first warms every cache the inputs
 * touch (compiled regexes, router tables, fast-check's own), so what remains is what a pass leaks.
 */
export async function heapGrowthOfRepeat(pass: () => Promise<void>): Promise<number> {
  await pass();
  await settle();
  const baseline = heapAfterGc();
  await pass();
  await settle();
  return heapAfterGc() - baseline;
}

/** Heap may grow by this much over a pass after warm-up (vitest's own bookkeeping); keeping the 10 MB bodies alone would be 30 MB. */
export const HEAP_SLACK = 8 * 1024 * 1024;

/** Counts cases and prints the line bench/run.js collects into bench/results/fuzz.json. */
export function caseCounter(target: string) {
  let cases = 0;
  const outcomes: Record<string, number> = {};
  console.log(`fuzz ${target}: seed ${SEED}, ${RUNS} runs per property (reproduce with FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS})`);
  return {
    add(n = 1) {
      cases += n;
    },
    /** counts an outcome of an oracle case (e.g. forwarded / refused), so a run shows both branches were taken */
    tally(outcome: string) {
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    },
    get cases() {
      return cases;
    },
    report() {
      process.stdout.write(`\nFUZZ-REPORT ${JSON.stringify({ target, cases, seed: SEED, runs: RUNS, outcomes })}\n`);
    },
  };
}

/** Nothing our suites send may leave a key on Object.prototype. */
export function expectPrototypeClean(): void {
  expect(Object.keys(Object.prototype)).toEqual([]);
  expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
}

/** Deeply nested JSON text (arrays or objects) without building it recursively. */
export function nested(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}
