/**
 * One tracker per relay and site key for the whole page, whatever React does: strict mode renders
 * and runs effects twice, fast refresh re-runs the app's modules, and a bundler may even load this
 * module twice. The trackers live on `globalThis`, so each of those finds the one already made.
 * @module
 */
import { createTracker } from '../browser/index.js';
import type { Consent, Tracker, TrackerOptions } from '../browser/types.js';

/** What the hooks last did with a tracker, so that a second run of the same effect does nothing. */
export interface Done {
  /** the consent the tracker was last given (made with, or set by the provider) */
  consent?: Consent | undefined;
  /** the person last identified, as `useIdentify` keys it */
  person?: string | undefined;
  /** the route of the last page view `usePageViews` sent */
  route?: string | undefined;
}

interface Registry {
  trackers: Map<string, Tracker>;
  done: WeakMap<Tracker, Done>;
}

const REGISTRY = Symbol.for('cdp-edge.react');

const registry = (): Registry => {
  const holder = globalThis as { [REGISTRY]?: Registry };
  holder[REGISTRY] ??= { trackers: new Map(), done: new WeakMap() };
  return holder[REGISTRY];
};

/** What the hooks last did with `tracker` on this page. */
export function doneWith(tracker: Tracker): Done {
  const { done } = registry();
  let record = done.get(tracker);
  if (record === undefined) {
    record = {};
    done.set(tracker, record);
  }
  return record;
}

/** The tracker of `relay` + `path` + `key` on this page: made on first use with these options, the same one after. */
export function trackerFor(options: TrackerOptions): Tracker {
  const name = `${options.relay}\n${options.path ?? ''}\n${options.key}`;
  const { trackers } = registry();
  let tracker = trackers.get(name);
  if (tracker === undefined) {
    tracker = createTracker(options);
    trackers.set(name, tracker);
    doneWith(tracker).consent = options.consent;
  }
  return tracker;
}

const serverOnly = (): Promise<never> =>
  Promise.reject(new Error('cdp-edge/react: the tracker runs in the browser; call it from an effect or an event handler'));

/**
 * What `useTracker()` gives while rendering on the server (SSR, React Server Components'
 * client-component pass): nothing is stored there and no page has a queue, so every call rejects.
 * Effects and event handlers never run on the server, so code that tracks from them never meets it.
 */
export const SERVER_TRACKER: Tracker = {
  track: serverOnly,
  identify: serverOnly,
  page: serverOnly,
  flush: serverOnly,
  reset: serverOnly,
  consent: serverOnly,
  on: () => () => {},
};

/** True in a browser page (the tracker needs `window`, `location` and its storage). */
export const inBrowser = (): boolean => typeof window !== 'undefined' && typeof document !== 'undefined';
