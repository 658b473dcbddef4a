/**
 * `cdp-edge/server`: track and identify from a server (an order paid, a webhook) through the
 * relay's door for servers, with the browsers' exactly-once. Runs on Node, Deno, Bun and Workers.
 * A durable spool for Node is `cdp-edge/server/spool`.
 *
 * @example
 * import { createServerTracker } from 'cdp-edge/server';
 * const cdp = createServerTracker({ relay: 'https://t.example.com', token: process.env.RELAY_COLLECT_TOKEN });
 * await cdp.track({ id: event.id, activity_id: 'act:cm:order-paid', person: { 'str::email': email } });
 * @module
 */
export { createServerTracker, type ServerTracker } from './tracker.js';
export { SERVER_COLLECT_PATH } from '../api/collect.js';
export {
  ServerTrackerError,
  type ServerIdentify,
  type ServerItem,
  type ServerItemOptions,
  type ServerResult,
  type ServerTrack,
  type ServerTrackerOptions,
  type Spool,
} from './types.js';
