/**
 * The tabs of one site key: one flushes at a time, and each tells the others when it changed the store.
 *
 * One tab flushes at a time, under a Web Lock (every current browser has them). Without Web
 * Locks each tab flushes on its own: two tabs may then send the same item, and the relay's
 * dedupe answers the second copy as a duplicate, so it still reaches the platform once.
 * @module
 */

/** Runs `fn` holding the lock, or `busy` when another tab holds it. */
export type WithLock = (fn: () => Promise<void>, busy: () => void) => Promise<unknown>;

/** A lock named `name` over Web Locks; without them, `fn` runs at once. */
export const lock =
  (name: string, locks: LockManager | false | undefined): WithLock =>
  (fn, busy) =>
    locks ? locks.request(name, { ifAvailable: true }, (held) => (held ? fn() : busy())) : fn();

/**
 * Calls `changed` whenever another tab of this site key (`name`, the lock's name) says it changed
 * the store; returns the function that says so to the others. Every browser with Web Locks has
 * BroadcastChannel too.
 */
export function watchTabs(name: string, changed: () => void): () => void {
  const channel = new BroadcastChannel(name);
  channel.onmessage = changed;
  return () => channel.postMessage(0);
}
