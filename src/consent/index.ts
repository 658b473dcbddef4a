/**
 * Consent adapters: each follows one consent platform and tells the snippet its state with
 * `cdp('consent', …)` (or a tracker's `consent(…)`). Separate from the snippet, so sites without
 * them pay nothing; each is a few hundred bytes and tree-shakes apart from the others.
 *
 * @example
 * import { followTcf } from 'cdp-edge/consent';
 * followTcf({ purposes: [8, 9] }); // tells window.cdp
 * @module
 */
export { followCookiebot, type CookiebotOptions } from './cookiebot.js';
export { followGoogle, type GoogleOptions } from './google.js';
export { followOneTrust, type OneTrustOptions } from './onetrust.js';
export { followTcf, type TcfOptions } from './tcf.js';
export type { AdapterOptions, ConsentState, ConsentTarget, Unfollow } from './follow.js';
