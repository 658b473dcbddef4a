/**
 * The Workers relay's building blocks, for a Worker that composes its own entry: the outbox
 * objects and their facade, the Durable Object store (pacer, counters), its refusal buckets, the
 * queue producer and the queue consumer. Not the Worker's main module
 * (workerd takes every export of that for an entrypoint): deploy `cdp-edge/relay/cloudflare`.
 * @module
 */
export { createDurableStore, RelayState } from './state.js';
export { durableRefusals } from './refusals.js';
export { queueProducer, consumeQueue } from './queue.js';
export { RelayOutbox } from './outbox-object.js';
export { createShardedOutbox } from './outbox.js';
export type { RelayEnv } from './types.js';
