/**
 * A platform that closes kept-alive connections the relay holds idle, on both Node transports
 * (node:http's pool, the Node entry's; undici's). After a gap longer than the platform's
 * keep-alive, announced (`Keep-Alive: timeout=1`) or not (1 s), and when the platform closes the
 * connection just as a call reuses it (its close not yet read by the relay), the call is delivered
 * on another connection: not in doubt, and sent once. A platform that reads a call and then closes
 * without answering may have applied it: that call stays in doubt and is never sent again.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createUpstream } from '../../src/relay/deliver/caller.js';
import { createNodeHttpTransport } from '../../src/relay/deliver/node-http.js';
import { callOnce } from '../../src/relay/deliver/send.js';
import { KEEP_ALIVE_MS, type Transport } from '../../src/relay/deliver/transport.js';
import { createUndiciTransport } from '../../src/relay/deliver/undici.js';

const ANSWER = JSON.stringify({ activities: [{ status: 'queued' }] });

interface StandIn {
  url: string;
  /** each call's body as received, with the number of the connection it came on (from 1) */
  received: { body: string; connection: number }[];
  /** closes, now, the connections with no call in flight */
  closeIdle(): void;
  close(): Promise<void>;
}

/** node:http's server, closing a connection idle for `keepAliveMs` (and announcing it: `Keep-Alive: timeout=n`). */
async function nodeServer(keepAliveMs: number): Promise<StandIn> {
  const received: StandIn['received'] = [];
  const numbers = new WeakMap<Socket, number>();
  let opened = 0;
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString(), connection: numbers.get(request.socket)! });
      response.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER);
    });
  });
  server.on('connection', (socket: Socket) => numbers.set(socket, ++opened));
  server.keepAliveTimeout = keepAliveMs;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    closeIdle: () => server.closeIdleConnections(),
    close: () => new Promise<void>((resolve) => server.close(() => resolve()).closeAllConnections()),
  };
}

/**
 * A platform on raw TCP that answers HTTP/1.1 with no `Keep-Alive` hint and closes a connection
 * idle for `idleMs`; `mute`: it reads a connection's calls from the `mute`th on and closes the
 * connection without answering.
 */
async function rawServer(options: { idleMs?: number; mute?: number } = {}): Promise<StandIn> {
  const received: StandIn['received'] = [];
  const idle = new Set<Socket>();
  const open = new Set<Socket>();
  let opened = 0;
  const server = createTcpServer((socket) => {
    const connection = ++opened;
    let calls = 0;
    let buffered = '';
    let timer: ReturnType<typeof setTimeout> | undefined;
    const rest = () => {
      idle.add(socket);
      if (options.idleMs !== undefined) timer = setTimeout(() => socket.destroy(), options.idleMs);
    };
    open.add(socket);
    socket.on('close', () => {
      open.delete(socket);
      idle.delete(socket);
      clearTimeout(timer);
    });
    socket.on('error', () => {});
    rest();
    socket.on('data', (chunk: Buffer) => {
      idle.delete(socket);
      clearTimeout(timer);
      buffered += chunk.toString();
      const head = buffered.indexOf('\r\n\r\n');
      const length = Number(/content-length: *(\d+)/i.exec(buffered.slice(0, head))?.[1] ?? 0);
      if (head < 0 || buffered.length < head + 4 + length) return;
      received.push({ body: buffered.slice(head + 4, head + 4 + length), connection });
      buffered = buffered.slice(head + 4 + length);
      if (options.mute !== undefined && ++calls >= options.mute) return void socket.destroy();
      socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${ANSWER.length}\r\n\r\n${ANSWER}`, rest);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    closeIdle: () => {
      for (const socket of idle) socket.destroy();
    },
    close: () => {
      for (const socket of open) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// One connection each: undici's pool may open another for a call that follows one just answered.
const transports: [string, () => Transport & { close(): Promise<void> }][] = [
  ['node:http pool', () => createNodeHttpTransport({ connections: 1 })],
  ['undici pool', () => createUndiciTransport({ connections: 1 })],
];

describe.each(transports)('on the %s transport, a platform that closes idle connections', (_, makeTransport) => {
  const opened: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const closable of opened.splice(0)) await closable.close();
  });

  /** A caller of `standIn` on a new transport, and a call of one activity named `name`. */
  const callerOf = (standIn: StandIn) => {
    const transport = makeTransport();
    opened.push(transport, standIn);
    const upstream = createUpstream({ baseUrl: standIn.url, apiKey: 'k', transport, timeoutMs: 10_000, backoff: { until: 0 }, now: Date.now });
    return (name: string) =>
      callOnce(upstream, 'activities/create', JSON.stringify({ activities: [{ activity_id: name }] }), { timeoutMs: 10_000, paced: true });
  };
  const bodies = (standIn: StandIn) => standIn.received.map(({ body }) => JSON.parse(body).activities[0].activity_id);

  it('announced (Keep-Alive: timeout=1, node:http server): the calls after a 1.3 s gap are delivered, each once', async () => {
    const standIn = await nodeServer(1_000);
    const call = callerOf(standIn);
    expect(await call('a')).toMatchObject({ kind: 'ok' });
    await sleep(1_300);
    for (const name of ['b', 'c', 'd']) expect(await call(name)).toMatchObject({ kind: 'ok' });
    expect(bodies(standIn)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('unannounced, after 1 s: the calls after a 1.3 s gap are delivered, each once', async () => {
    const standIn = await rawServer({ idleMs: 1_000 });
    const call = callerOf(standIn);
    expect(await call('a')).toMatchObject({ kind: 'ok' });
    await sleep(1_300);
    for (const name of ['b', 'c']) expect(await call(name)).toMatchObject({ kind: 'ok' });
    expect(bodies(standIn)).toEqual(['a', 'b', 'c']);
    // The first connection was closed by the platform; the next call went on a new one.
    expect(standIn.received.slice(0, 2).map(({ connection }) => connection)).toEqual([1, 2]);
  });

  it.each([
    ['announcing its keep-alive (node:http server)', () => nodeServer(60_000)],
    ['without the hint', () => rawServer()],
  ])('%s, just as a call reuses the connection, the close not yet read by the relay: delivered on a new connection, once', async (_, start) => {
    const standIn = await start();
    const call = callerOf(standIn);
    for (const name of ['a', 'b']) expect(await call(name)).toMatchObject({ kind: 'ok' });
    // The relay keeps its connections: both calls came on one.
    expect(standIn.received.map(({ connection }) => connection)).toEqual([1, 1]);
    // The connection back in the relay's pool, the platform closes it in the same turn of the
    // event loop as the next call is made (as when the relay's loop was busy when the close came).
    await sleep(50);
    // From a callback of I/O (a file read's), where the next check phase comes before any new poll.
    await readFile(import.meta.filename);
    standIn.closeIdle();
    expect(await call('c')).toMatchObject({ kind: 'ok' });
    expect(standIn.received).toEqual([
      { body: expect.stringContaining('"a"'), connection: 1 },
      { body: expect.stringContaining('"b"'), connection: 1 },
      { body: expect.stringContaining('"c"'), connection: 2 },
    ]);
  });

  it.each([
    ['a kept-alive connection', 2],
    ['a new connection', 1],
  ])('that reads a call on %s and closes without answering: the call is in doubt, sent once', async (_, mute) => {
    const standIn = await rawServer({ mute });
    const call = callerOf(standIn);
    if (mute === 2) expect(await call('a')).toMatchObject({ kind: 'ok' });
    expect(await call('read')).toMatchObject({ kind: 'ambiguous', message: 'the connection was lost' });
    // Nothing is sent again by the transport (it might apply the call twice).
    await sleep(100);
    expect(bodies(standIn).filter((name) => name === 'read')).toEqual(['read']);
  });
});

it("keeps an idle connection to the platform less long than Node's own server keeps one", () => {
  expect(KEEP_ALIVE_MS).toBeLessThan(createServer().keepAliveTimeout);
});
