// The relay's event loop stalled past a platform call's timeout (a long collection, a burst of
// synchronous work) while the call's answer already sat in its socket: Node runs the expired
// timer before it polls the socket, and the call ended as timed out, its entries in doubt though
// the answer was there to read. The platform answers from another process, so it answers while
// this one is stalled.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createNodeHttpTransport } from '../../src/relay/deliver/node-http.js';
import type { Transport } from '../../src/relay/deliver/transport.js';
import { createUndiciTransport } from '../../src/relay/deliver/undici.js';

const PLATFORM = `
const server = require('node:http').createServer((request, response) => {
  request.resume();
  const answer = () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"answered":true}');
  // The second call on a connection is answered 150 ms after it came: while the caller is stalled.
  const later = () => ((request.socket.calls = (request.socket.calls ?? 0) + 1) > 1 ? setTimeout(answer, 150) : answer());
  // /large: 200 kB, its second half 150 ms after its first (a streamed answer, past the 64 kB read whole).
  const large = () => {
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': 200000 });
    response.write(Buffer.alloc(100000, 97));
    setTimeout(() => response.end(Buffer.alloc(100000, 98)), 150);
  };
  request.on('end', () => (request.url === '/large' ? large() : later()));
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

let platform: ChildProcess;
let url: string;
beforeAll(async () => {
  platform = spawn(process.execPath, ['-e', PLATFORM], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(platform.stdout!, 'data')) as [Buffer];
  url = `http://127.0.0.1:${line.toString().trim()}/v1/activities/create`;
});
afterAll(() => platform?.kill());

/** The calls' timeout, and how long the loop stalls: both well past the platform's 150 ms, with room for a busy machine. */
const TIMEOUT_MS = 600;
const STALL_MS = 1_200;

/**
 * Blocks this process's event loop for {@link STALL_MS}, as a long collection would (without
 * spending the CPU the other test files share), outside the timers' phase: in it, Node would not
 * run a timer that expired during the same pass.
 */
const stall = () =>
  new Promise<void>((resolve) =>
    setImmediate(() => {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, STALL_MS);
      resolve();
    }),
  );

const TRANSPORTS = [
  ['node:http (the Node entry)', () => createNodeHttpTransport()],
  ['undici', () => createUndiciTransport()],
] as [string, () => Transport & { close(): Promise<void> }][];

it.each(TRANSPORTS)('reads an answer that arrived while the event loop was stalled past the call timeout: %s', async (_, make) => {
  const transport = make();
  try {
    const call = (timeoutMs: number) =>
      transport({ method: 'POST', url, headers: { 'content-type': 'application/json' }, body: '{"activities":[]}', timeoutMs });
    // A first call opens the kept-alive connection the second is written on.
    expect((await call(10_000)).status).toBe(200);
    const answer = call(TIMEOUT_MS);
    // 50 ms in, the call has been written and is not answered yet; the loop then stalls past the
    // call's timeout while the answer comes.
    await new Promise((resolve) => setTimeout(resolve, 50));
    await stall();
    const result = await answer;
    expect(result.status).toBe(200);
    expect(new TextDecoder().decode(result.body as Uint8Array)).toBe('{"answered":true}');
  } finally {
    await transport.close();
  }
});

it.each(TRANSPORTS)('reads the rest of a streamed answer that arrived while the event loop was stalled past its quiet time: %s', async (_, make) => {
  const transport = make();
  try {
    const large = new URL('/large', url).href;
    const answer = await transport({ method: 'GET', url: large, headers: {}, body: undefined, timeoutMs: TIMEOUT_MS });
    expect(answer.body).toBeInstanceOf(ReadableStream);
    const reader = (answer.body as ReadableStream<Uint8Array>).getReader();
    let bytes = 0;
    let first = true;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      // Once the first half is in, the loop stalls past the answer's quiet time while the second comes.
      if (first && bytes >= 100000) {
        first = false;
        await stall();
      }
    }
    expect(bytes).toBe(200000);
  } finally {
    await transport.close();
  }
});
