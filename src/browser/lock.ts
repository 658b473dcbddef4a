/**
 * One tab flushes at a time: a Web Lock when the browser has them, otherwise a lease kept
 * in the queue's own store (an IndexedDB read-modify-write is atomic across tabs).
 * @module
 */
import type { Store } from './types.js';

/**
 * How long a fallback lease lasts: a crashed tab blocks the others at most this long. A flush
 * outliving it may overlap another tab's; the relay's dedupe makes that harmless.
 */
export const LEASE_MS = 60_000;

/** Runs `fn` holding the lock; `false` (without running it) when another tab holds it. */
export type WithLock = (fn: () => Promise<void>) => Promise<boolean>;

/** The fallback lease as stored under the key `lock`: owner and expiry. */
interface Lease {
  o: string;
  x: number;
}

/** A lock named `name` over Web Locks, or over `store` when `locks` is missing. */
export function lock(name: string, locks: LockManager | false | undefined, store: Store, now: () => number, me: string): WithLock {
  if (locks)
    return (fn) =>
      locks.request(name, { ifAvailable: true }, async (held) => {
        if (!held) return false;
        await fn();
        return true;
      }) as unknown as Promise<boolean>;
  // Takes (or releases) the lease when it is free, expired or already this page's; true if it was.
  const lease = async (take: boolean) => {
    let mine = false;
    await store.update('lock', (stored) => {
      const held = stored as Lease | undefined;
      mine = !held || held.o === me || held.x < now();
      if (!mine) return held;
      return take ? { o: me, x: now() + LEASE_MS } : false;
    });
    return mine;
  };
  return async (fn) => {
    if (!(await lease(true))) return false;
    try {
      await fn();
    } finally {
      await lease(false);
    }
    return true;
  };
}
