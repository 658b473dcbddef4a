/**
 * The relay on Cloudflare Workers: `export { default, RelayState, RelayOutbox } from 'cdp-edge/relay/cloudflare'`.
 * Vars and secrets carry the relay's variable names (docs/architecture.md). Bindings:
 * `RELAY_OUTBOX` the outbox objects (`RELAY_SHARDS` of them: accepted items wait there and each
 * object's alarm delivers them), `RELAY_STATE` the key's pacer and each site's address-lookup
 * counter, `RELAY_RATE_LIMIT` (optional) limits visitors, `RELAY_QUEUE` (optional) a buffer in
 * front of the outbox, `ANALYTICS` (optional) Workers Analytics Engine (docs/analytics-engine.md),
 * `ASSETS` (optional) serves cdp.js. Log lines go to Workers Logs as JSON `console.log` lines, at
 * the level `RELAY_LOG` sets. workerd accepts only the handler and Durable Object classes as
 * exports of the entry, so nothing else is exported here.
 *
 * @example
 * // src/index.ts of your Worker
 * export { default, RelayState, RelayOutbox } from 'cdp-edge/relay/cloudflare';
 * @module
 */
import type { OutboxItem } from './state/outbox.js';
import { build, misconfigured } from './workers/build.js';
import { consumeQueue } from './workers/queue.js';
import type { ExecutionContext, MessageBatch, RelayEnv } from './workers/types.js';

export { RelayState } from './workers/state.js';
export { RelayOutbox } from './workers/outbox-object.js';

export default {
  async fetch(request: Request, env: RelayEnv, ctx: ExecutionContext): Promise<Response> {
    let relay: ReturnType<typeof build>;
    try {
      relay = build(env);
    } catch (error) {
      return misconfigured(error, env);
    }
    return relay.app.fetch(request, env, ctx as never);
  },

  /** The optional queue's consumer: each batch goes into the outbox objects, which deliver it. */
  async queue(batch: MessageBatch<OutboxItem>, env: RelayEnv): Promise<void> {
    let relay: ReturnType<typeof build>;
    try {
      relay = build(env);
    } catch (error) {
      // Nothing is taken: the messages come back until the configuration is fixed.
      misconfigured(error, env);
      batch.retryAll({ delaySeconds: 60 });
      return;
    }
    await consumeQueue(batch, relay.outbox, relay.config.windowMs, relay.logger);
  },
};
