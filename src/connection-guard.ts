/**
 * What keeps a Node server answering when connections pile up (listen.ts applies it):
 * - a cap per client address: past it, a new connection from that address is closed at once;
 * - shedding under descriptor pressure: when the process nears its limit of open files, the
 *   connections with no request in flight (idle keep-alive ones, and ones that never sent a
 *   request) are closed, longest idle first, so a visitor with a request to make gets a descriptor
 *   instead of a connection reset when the process has none left.
 * The limit is the soft `RLIMIT_NOFILE`, read from `/proc/self/limits`; where that cannot be read
 * (not Linux) only the cap applies.
 * @module
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export interface ConnectionGuard {
  /** connections one address may hold open at once @default Infinity */
  maxConnectionsPerAddress: number;
  /** the key an address counts under (e.g. an IPv6 /64); undefined = not capped (a trusted proxy) @default the address itself */
  addressOf?: (address: string) => string | undefined;
  /** the process's open-file limit @default read from /proc/self/limits */
  descriptorLimit?: number | undefined;
}

/** The soft limit of open files of this process, or undefined where it cannot be read. */
export function descriptorLimit(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((text) => text.startsWith('Max open files'));
    const soft = Number(line?.split(/\s{2,}/)[1]);
    return Number.isFinite(soft) && soft > 0 ? soft : undefined;
  } catch {
    return undefined;
  }
}

/** Descriptors open now, or undefined where they cannot be counted. */
function openDescriptors(): number | undefined {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return undefined;
  }
}

/**
 * Guards `server`'s connections. `busy(socket)` says whether a request is in flight on it; the
 * caller tells `idle(socket)` when its last request ends.
 */
export function guardConnections(server: Server, guard: ConnectionGuard): { idle(socket: Socket): void; busy(socket: Socket): void } {
  const limit = guard.descriptorLimit ?? descriptorLimit();
  // Kept free for what else the process opens (the store, the platform's connections, logs).
  const reserve = limit === undefined ? 0 : Math.max(16, Math.floor(limit / 8));
  const perAddress = new Map<string, number>();
  // Connections with no request in flight, longest idle first (a Map keeps insertion order).
  const idle = new Map<Socket, true>();
  let open = 0;

  const shed = () => {
    if (limit === undefined || open < (limit - reserve) / 2) return;
    const used = openDescriptors();
    if (used === undefined || used < limit - reserve) return;
    // Back to two reserves below the limit, so the next few connections need no shedding.
    let excess = used - (limit - 2 * reserve);
    for (const socket of idle.keys()) {
      if (excess-- <= 0) break;
      idle.delete(socket);
      socket.destroy();
    }
  };

  server.on('connection', (socket: Socket) => {
    const key = socket.remoteAddress === undefined ? undefined : (guard.addressOf ?? ((address: string) => address))(socket.remoteAddress);
    if (key !== undefined) {
      const count = perAddress.get(key) ?? 0;
      if (count >= guard.maxConnectionsPerAddress) return void socket.destroy();
      perAddress.set(key, count + 1);
    }
    open++;
    shed();
    idle.set(socket, true);
    socket.once('close', () => {
      open--;
      idle.delete(socket);
      if (key === undefined) return;
      const count = (perAddress.get(key) ?? 1) - 1;
      if (count === 0) perAddress.delete(key);
      else perAddress.set(key, count);
    });
  });

  return {
    busy: (socket) => void idle.delete(socket),
    idle: (socket) => {
      if (socket.destroyed) return;
      idle.delete(socket);
      idle.set(socket, true);
    },
  };
}
