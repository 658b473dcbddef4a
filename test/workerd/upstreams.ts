/**
 * A platform stand-in per pool worker of the workerd project. A worker runs its files one after
 * another in one Miniflare (vitest.config.ts), so its files share this upstream (its recorded
 * calls, its scripted faults) as they share the Durable Objects: each file resets it before it
 * counts, and counts only the calls that carry its own items. Every worker start gets a new one
 * here, and the workers run side by side in the suite's pool. They are all closed when the run
 * ends (global-setup.ts). Both the config and the global setup run in Vitest's main process, so
 * the list lives on globalThis (each loads its own copy of this module).
 */
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { startUpstreamStack } from '../relay/support/stack.js';

const KEY = Symbol.for('cdp-edge.workerd-upstreams');
type Closable = { close(): Promise<void> };
/** The stand-ins running, by project (`workerd`, `workerd-alone`): each project closes its own. */
function running(project: string): Closable[] {
  const all = (globalThis as Record<symbol, Record<string, Closable[]>>)[KEY] ?? {};
  (globalThis as Record<symbol, Record<string, Closable[]>>)[KEY] = all;
  all[project] ??= [];
  return all[project];
}

/**
 * A platform that accepts a connection and then neither reads from it nor answers: a call's body
 * stays unsent once the socket's buffers are full, and its answer never comes (call-timeout.test.ts).
 * The test upstream reads every body whole before it looks at its faults, so it cannot be this.
 */
async function startDeafPlatform(answer = ''): Promise<Closable & { url: string }> {
  const sockets = new Set<Socket>();
  const server = createServer({ pauseOnConnect: true }, (socket) => {
    sockets.add(socket);
    // Answers (if it does) once the call's first bytes arrive, and reads nothing after them.
    if (answer) socket.once('data', () => socket.pause().write(answer)).resume();
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Starts a stand-in (and a deaf platform) for one pool worker of `project` and remembers them for closeUpstreams. */
export async function startWorkerUpstream(project: string): Promise<{ url: string; deafUrl: string; halfUrl: string }> {
  const stack = await startUpstreamStack();
  running(project).push(stack);
  const deaf = await startDeafPlatform();
  running(project).push(deaf);
  const half = await startDeafPlatform('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"a":');
  running(project).push(half);
  return { url: stack.url, deafUrl: deaf.url, halfUrl: half.url };
}

/** Closes every stand-in started so far for `project`. */
export async function closeUpstreams(project: string): Promise<void> {
  const stacks = running(project).splice(0);
  await Promise.all(stacks.map((stack) => stack.close()));
}
