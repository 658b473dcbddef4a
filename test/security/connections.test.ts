// Attack: open hundreds of connections and send nothing (or trickle a header a byte at a time).
// With Node's defaults they stayed open for good and, at the process's file-descriptor limit,
// normal /collect failed. Every relay connection now has header, request and idle deadlines.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, goodTrack, type Stack, startStack } from './support.js';

const IDLE_MS = 1_000;
const HEADERS_MS = 1_500;

/** Opens `count` TCP connections to `url` and resolves once all are connected. */
async function openIdle(url: string, count: number): Promise<{ sockets: Socket[]; closed: () => number }> {
  const { hostname, port } = new URL(url);
  let closed = 0;
  const sockets = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Socket>((resolve, reject) => {
          const socket = connect(Number(port), hostname, () => resolve(socket));
          socket.once('error', reject);
          socket.once('close', () => closed++);
        }),
    ),
  );
  for (const socket of sockets) socket.on('error', () => {});
  return { sockets, closed: () => closed };
}

describe('idle and trickling connections', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ relay: { connections: { idleTimeoutMs: IDLE_MS, headersTimeoutMs: HEADERS_MS } } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('closes 300 idle connections within the idle time while /collect keeps working', async () => {
    const idle = await openIdle(stack.relay.url, 300);
    const response = await collect(stack.relay.url, '203.0.113.9', [goodTrack('busy@example.com')]);
    expect(response.status).toBe(200);
    await response.body?.cancel();
    const started = Date.now();
    while (idle.closed() < 300 && Date.now() - started < IDLE_MS * 4) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(idle.closed()).toBe(300);
    expect(Date.now() - started).toBeLessThan(IDLE_MS * 3);
    const after = await collect(stack.relay.url, '203.0.113.9', [goodTrack('after@example.com')]);
    expect(after.status).toBe(200);
    await after.body?.cancel();
  });

  it('ends a connection that trickles its headers past the header deadline', async () => {
    const { sockets, closed } = await openIdle(stack.relay.url, 1);
    const socket = sockets[0]!;
    const header = 'POST /collect HTTP/1.1\r\nHost: relay\r\nX-Slow: ' + 'a'.repeat(200);
    let sent = 0;
    const started = Date.now();
    // a byte every 100 ms: never idle, never done
    const timer = setInterval(() => {
      if (!socket.destroyed && sent < header.length) socket.write(header[sent++]!);
    }, 100);
    while (closed() === 0 && Date.now() - started < HEADERS_MS * 4) await new Promise((resolve) => setTimeout(resolve, 50));
    clearInterval(timer);
    expect(closed()).toBe(1);
    expect(Date.now() - started).toBeLessThan(HEADERS_MS * 3);
  });
});
