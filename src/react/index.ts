/**
 * cdp-edge for React: `<CdpProvider>` makes the page's one tracker (strict mode and fast refresh
 * included), `useTracker()` gives it to any component, `useIdentify()` identifies the signed-in
 * visitor once, `usePageViews()` sends a page view per route. React is a peer dependency; the
 * tracker is `cdp-edge/browser`'s, shared with any code that imports it.
 *
 * @example
 * import { CdpProvider, useIdentify, useTracker } from 'cdp-edge/react';
 * <CdpProvider relay="https://t.example.com" siteKey="pk_live_123" spa>
 *   <App />
 * </CdpProvider>
 * @module
 */
export { CdpProvider, useTracker, type CdpProviderProps } from './provider.js';
export { useIdentify, usePageViews } from './hooks.js';
export type { Consent, Fields, IdentifyOptions, Tracker, TrackerOptions } from '../browser/types.js';
