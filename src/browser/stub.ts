/**
 * `window.cdp`: replays what the inline stub queued, in order, and serves the command form
 * `cdp('track', …)` next to the methods `cdp.track(…)`.
 * @module
 */
import { createTracker } from './tracker.js';
import { ERRORS } from './validate.js';
import type { Tracker } from './types.js';

const METHODS = ['track', 'identify', 'page', 'flush', 'reset', 'consent', 'on'];

/** The global `cdp`: a function taking commands, with the tracker's methods on it. */
export type Cdp = ((command: string, ...args: unknown[]) => unknown) & {
  [M in keyof Tracker]?: (...a: Parameters<Tracker[M]>) => Promise<Awaited<ReturnType<Tracker[M]>>>;
} & { q?: IArguments[]; loaded?: boolean };

/**
 * Installs `cdp` on `w` unless a loaded copy is there already (the script included twice).
 * Calls before `init` wait for it, in order; a second `init` is ignored with a warning.
 */
export function install(w: { cdp?: Cdp }): Cdp {
  const prior = w.cdp;
  if (prior?.loaded) return prior;
  // Unset once a tracker is made.
  let init: ((t: Tracker) => void) | undefined;
  const ready = new Promise<Tracker>((resolve) => {
    init = resolve;
  });

  const cdp: Cdp = (name, ...args) => {
    if (name === 'init') {
      if (!init) return console.warn('cdp: E10 init');
      try {
        init(createTracker(args[0] as never));
        init = undefined;
      } catch (error) {
        console.error(error);
      }
      return;
    }
    // Before init this waits for it; after, it runs on the next microtask, in call order either way.
    const out = ready.then((loaded) => {
      if (!METHODS.includes(name)) throw new TypeError(`cdp: ${ERRORS.command} ${name}`);
      return (loaded[name as keyof Tracker] as (...args: unknown[]) => unknown)(...args);
    });
    // Rejections reach whoever awaits them; an unawaited one is logged, never an uncaught error in the page.
    out.catch(console.warn);
    return out;
  };
  for (const method of METHODS) (cdp as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => cdp(method, ...args);
  cdp.loaded = true;
  w.cdp = cdp;
  for (const args of prior?.q ?? []) cdp(...(args as unknown as [string]));
  return cdp;
}
