/**
 * cdp-edge in the browser: a tracker that keeps every event in IndexedDB until the relay has
 * acknowledged it. Named exports only; importing has no side effects.
 *
 * @example
 * import { createTracker } from 'cdp-edge/browser';
 * const cdp = createTracker({ relay: 'https://t.example.com', key: 'pk_live_123' });
 * cdp.track('act:cm:viewed-pricing', { 'str:cm:plan': 'pro' });
 * @module
 */
export { createTracker } from './tracker.js';
export { uuid } from './uuid.js';
export { attribution } from './page.js';
export { CdpInputError, ERRORS, isFieldId, isActivityId } from './validate.js';
export { idbStore, memoryStore } from './store.js';
export { install, type Cdp } from './stub.js';
export type * from './types.js';
