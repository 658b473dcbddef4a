/**
 * `<CdpProvider>` and `useTracker()`: the page's one tracker, handed down through React context.
 * @module
 */
import { createContext, createElement, type ReactNode, useContext, useEffect } from 'react';
import type { Tracker, TrackerOptions } from '../browser/types.js';
import { doneWith, inBrowser, SERVER_TRACKER, trackerFor } from './tracker.js';

const TrackerContext = createContext<Tracker | null>(null);

/**
 * Props of `<CdpProvider>`: the options of `createTracker` with the site key as `siteKey` (React
 * keeps a prop named `key` to itself), or a `tracker` you made.
 */
export interface CdpProviderProps extends Partial<Omit<TrackerOptions, 'key'>> {
  /** The site key the relay knows, e.g. `pk_live_…` (the `key` of `createTracker`). */
  siteKey?: string;
  /** A tracker made by `createTracker`, used instead of one made from the other props. */
  tracker?: Tracker;
  children?: ReactNode;
}

/**
 * Gives its children the page's tracker for `relay` and `siteKey`: made once, on the first render
 * in the browser, and the same one after (strict mode, fast refresh, a second provider). Other
 * options count only when it is made. `consent` may change: each new value goes to
 * `tracker.consent()` (a cookie banner's choice, say); the first is the consent until the visitor
 * chooses, as in `createTracker`. While rendering on the server there is no tracker: its methods
 * reject, and effects and event handlers, where tracking belongs, never run there.
 *
 * @example
 * <CdpProvider relay="/t" siteKey="pk_live_123" consent={choice}>
 *   <App />
 * </CdpProvider>
 */
export function CdpProvider({ children, tracker: given, siteKey, ...options }: CdpProviderProps): ReactNode {
  const tracker = given ?? (inBrowser() ? trackerFor({ ...options, key: siteKey } as TrackerOptions) : SERVER_TRACKER);
  const consent = options.consent;
  useEffect(() => {
    const done = doneWith(tracker);
    if (consent === undefined || consent === done.consent) return;
    done.consent = consent;
    tracker.consent(consent).catch(report('consent'));
  }, [tracker, consent]);
  return createElement(TrackerContext.Provider, { value: tracker }, children);
}

/** The tracker of the nearest `<CdpProvider>`. Throws outside of one. */
export function useTracker(): Tracker {
  const tracker = useContext(TrackerContext);
  if (tracker === null) throw new Error('cdp-edge/react: useTracker() needs a <CdpProvider> above it');
  return tracker;
}

/** Logs a call the hooks made for the app and nobody awaits (bad input: `CdpInputError`). */
export const report =
  (what: string) =>
  (error: unknown): void =>
    console.error(`cdp-edge/react: ${what} failed`, error);
