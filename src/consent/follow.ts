/**
 * What every consent adapter shares: the snippet's states, where a state goes, and how a
 * platform's answer becomes a state. Nothing here touches the page until an adapter starts.
 * @module
 */

/** The snippet's consent states (docs/snippet.md, "Consent"). */
export type ConsentState = 'granted' | 'denied' | 'pending' | 'store-only';

/**
 * Where the adapter tells each new state: a tracker (`createTracker(…)`), the command function
 * `cdp`, or by default the page's `window.cdp` at the moment of the change (the inline stub
 * queues it until `cdp.js` has loaded).
 */
export type ConsentTarget = { consent(state: ConsentState): unknown } | ((command: 'consent', state: ConsentState) => unknown);

export interface AdapterOptions {
  target?: ConsentTarget;
}

/** Stops following the platform (its listener is removed). */
export type Unfollow = () => void;

/**
 * The state for what the platform allows: storing on the device and sending. `storage`
 * `undefined` means the visitor has not chosen yet (`pending`); no storage is `denied`, since
 * the snippet cannot send what it may not store.
 */
export function stateOf(storage: boolean | undefined, sending: boolean): ConsentState {
  if (storage === undefined) return 'pending';
  if (!storage) return 'denied';
  return sending ? 'granted' : 'store-only';
}

/**
 * A function that tells `target` each new state once. `pending` is never told: it is where the
 * snippet starts (`consent: 'pending'`), and platforms do not take a choice back to it.
 */
export function teller(target?: ConsentTarget): (state: ConsentState) => void {
  let last: ConsentState | undefined;
  return (state) => {
    if (state === last || state === 'pending') return;
    last = state;
    const to = target ?? (globalThis as { cdp?: ConsentTarget }).cdp;
    try {
      const told = typeof to === 'function' ? to('consent', state) : to?.consent(state);
      // A rejection (a bad state, a broken tracker) is the tracker's to report, not the page's to crash on.
      void Promise.resolve(told).catch(() => {});
    } catch {}
  };
}

/** Calls `then` with what `get` returns once it is defined, looking every 50 ms for `waitMs`; returns a stop. */
export function whenDefined<T>(get: () => T | undefined, then: (value: T) => void, waitMs = 10_000): Unfollow {
  const started = Date.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const look = () => {
    const value = get();
    if (value !== undefined) then(value);
    else if (Date.now() - started < waitMs) timer = setTimeout(look, 50);
  };
  look();
  return () => clearTimeout(timer);
}
