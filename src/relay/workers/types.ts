/**
 * The Workers runtime types the relay uses, from @cloudflare/workers-types' importable variant,
 * and the Worker's bindings.
 * @module
 */
import type { AnalyticsEngineDataset, DurableObjectNamespace, Fetcher, Message, Queue, RateLimit } from '@cloudflare/workers-types/index.ts';
import type { RelayOutbox } from './outbox-object.js';
import type { RelayState } from './state.js';

export type { DurableObjectState, ExecutionContext, Message, MessageBatch, Queue } from '@cloudflare/workers-types/index.ts';
export type QueueMessage<T = unknown> = Message<T>;

/** The Worker's bindings: the relay's vars and secrets, the state Durable Objects, and optional queue, limits and assets. */
export interface RelayEnv {
  /** Durable Object namespace of `RelayOutbox`: the outbox objects (accepted items, dedupe ids, dead letters; each delivers from its alarm) */
  RELAY_OUTBOX: DurableObjectNamespace<RelayOutbox>;
  /** Durable Object namespace of `RelayState`: the key's pacer, the address-lookup counters */
  RELAY_STATE: DurableObjectNamespace<RelayState>;
  /** optional producer binding: accepted items are queued, the consumer puts them into the outbox objects */
  RELAY_QUEUE?: Queue;
  /** optional Workers Rate Limiting binding: limits each visitor without a Durable Object call */
  RELAY_RATE_LIMIT?: RateLimit;
  /** optional Workers Analytics Engine dataset */
  ANALYTICS?: AnalyticsEngineDataset;
  /** optional static assets holding cdp.js */
  ASSETS?: Fetcher;
  [name: string]: unknown;
}
