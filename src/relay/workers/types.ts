/**
 * The few Workers runtime types the relay uses, declared here so the rest of the project
 * keeps Node's and the DOM's globals (the full @cloudflare/workers-types would replace them).
 * @module
 */

import type { RateLimitBinding } from '../limits.js';

export interface SqlCursor<T> {
  toArray(): T[];
}
export interface SqlStorage {
  exec<T = Record<string, unknown>>(query: string, ...bindings: unknown[]): SqlCursor<T>;
}
export interface DurableObjectState {
  storage: { sql: SqlStorage; transactionSync<T>(fn: () => T): T };
}
export interface DurableObjectStub {
  fetch(input: string | Request, init?: RequestInit): Promise<Response>;
}
export interface DurableObjectNamespace {
  idFromName(name: string): unknown;
  get(id: unknown): DurableObjectStub;
}
export interface Queue<T = unknown> {
  sendBatch(messages: { body: T }[]): Promise<void>;
}
export interface QueueMessage<T = unknown> {
  readonly id: string;
  readonly body: T;
  readonly attempts: number;
  ack(): void;
  retry(options?: { delaySeconds?: number }): void;
}
export interface MessageBatch<T = unknown> {
  readonly queue: string;
  readonly messages: readonly QueueMessage<T>[];
}
export interface ExecutionContext {
  waitUntil(promise: Promise<unknown>): void;
}
export interface Fetcher {
  fetch(input: string | Request, init?: RequestInit): Promise<Response>;
}

/** The Worker's bindings: Contract 3's vars and secrets, the state Durable Object, optional queue and assets. */
export interface RelayEnv {
  /** Durable Object namespace of `RelayState` (required: dedupe must be consistent) */
  RELAY_STATE: DurableObjectNamespace;
  /** optional producer binding: accepted entries are queued, a consumer forwards them */
  RELAY_QUEUE?: Queue;
  /** optional Workers Rate Limiting binding: limits each visitor without a Durable Object call */
  RELAY_RATE_LIMIT?: RateLimitBinding;
  /** optional static assets holding cdp.js */
  ASSETS?: Fetcher;
  [name: string]: unknown;
}
