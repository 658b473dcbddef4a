// The parts of `cloudflare:test` these tests use (the plugin's own types need the full
// @cloudflare/workers-types globals, which would clash with Node's and the DOM's here).
declare module 'cloudflare:test' {
  import type { DurableObjectState, ExecutionContext, MessageBatch } from '@cloudflare/workers-types/index.ts';
  export const env: Record<string, any>;
  export const SELF: { fetch(input: string | Request, init?: RequestInit): Promise<Response> };
  export function createExecutionContext(): ExecutionContext;
  export function waitOnExecutionContext(ctx: unknown): Promise<void>;
  export function abortAllDurableObjects(): Promise<void>;
  export function runDurableObjectAlarm(stub: unknown): Promise<boolean>;
  export function runInDurableObject<R>(stub: unknown, callback: (instance: unknown, state: DurableObjectState) => R | Promise<R>): Promise<R>;
  export function createMessageBatch<Body = unknown>(
    queueName: string,
    messages: { id: string; timestamp: Date | number; attempts: number; body: Body }[],
  ): MessageBatch<Body>;
  export function getQueueResult(
    batch: unknown,
    ctx: unknown,
  ): Promise<{
    outcome: string;
    ackAll: boolean;
    retryBatch: { retry: boolean };
    explicitAcks: string[];
    retryMessages: { msgId: string; delaySeconds?: number }[];
  }>;
}
