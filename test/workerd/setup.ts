// Every workerd test file ends with the outbox objects idle: their alarms deliver on their own, and
// an alarm still running when the worker's Miniflare closes would be cut off mid-call, or deliver
// into the next file of the worker, which shares the objects and the upstream.
import { env } from 'cloudflare:test';
import { afterAll } from 'vitest';
import { createShardedOutbox, outboxName } from '../../src/relay/workers/outbox.js';
import { DEFAULT_SHARDS } from '../../src/relay/workers/state.js';
import { drained } from './target.js';

afterAll(async () => {
  await drained(createShardedOutbox(env['RELAY_OUTBOX'], DEFAULT_SHARDS));
  const namespace = env['RELAY_OUTBOX'];
  for (let shard = 0; shard < DEFAULT_SHARDS; shard++) {
    const stub = namespace.get(namespace.idFromName(outboxName(shard)));
    for (let i = 0; i < 400 && (await stub.usage()).delivering; i++) await new Promise((resolve) => setTimeout(resolve, 25));
  }
}, 30_000);
