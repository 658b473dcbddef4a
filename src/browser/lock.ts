/**
 * One tab flushes at a time, under a Web Lock (every current browser has them). Without Web
 * Locks each tab flushes on its own: two tabs may then send the same item, and the relay's
 * dedupe answers the second copy as a duplicate, so it still reaches the platform once.
 * @module
 */

/** Runs `fn` holding the lock; `false` (without running it) when another tab holds it. */
export type WithLock = (fn: () => Promise<void>) => Promise<boolean>;

/** A lock named `name` over Web Locks; without them, `fn` runs at once. */
export const lock =
  (name: string, locks: LockManager | false | undefined): WithLock =>
  (fn) =>
    locks
      ? (locks.request(name, { ifAvailable: true }, async (held) => {
          if (!held) return false;
          await fn();
          return true;
        }) as unknown as Promise<boolean>)
      : fn().then(() => true);
