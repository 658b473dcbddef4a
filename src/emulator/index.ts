/**
 * The emulator: the platform API (all 29 endpoints) run locally, the embedded default upstream.
 * `createEmulator` is runtime-neutral; `startEmulator` (Node) serves it on a port.
 *
 * @example
 * import { startEmulator } from 'cdp-edge/emulator';
 * const emulator = await startEmulator({ port: 0, key: 'dev-key' });
 * // …point a client or the relay at emulator.url…
 * await emulator.close();
 * @module
 */
export { createEmulator, type Emulator } from './emulator.js';
export type { CallCounts, EndpointCalls } from './calls.js';
export { startEmulator, type RunningEmulator, type StartOptions } from './node.js';
export type { EmulatorOptions, FaultedCall, FaultSpec, Faults, GeoPoint } from './options.js';
export type { EmulatorSnapshot, PersonSnapshot, AccountSnapshot, AudienceSnapshot } from './snapshot.js';
export type { Store } from './store.js';
export type { Person, Account, CustomField, Audience, Membership, ActivityEvent, PersonLocation } from './records.js';
