// The queued path (Workers Queues) without workerd: what the queue took is accepted exactly once,
// whatever fails after it (the consumer's dedupe, in the outbox objects, is tested in workerd: test/workerd/). Each failure is injected.
import { describe, expect, it } from 'vitest';
import { createRelay } from '../../src/relay/app.js';
import type { OutboxItem } from '../../src/relay/state/outbox.js';
import { parseConfig } from '../../src/relay/core/config.js';
import type { LogLine } from '../../src/relay/core/logging.js';
import { createMemoryStore } from '../../src/relay/state/memory.js';
import { queueProducer } from '../../src/relay/workers/queue.js';
import type { Queue } from '../../src/relay/workers/types.js';

const ORIGIN = 'https://shop.example.com';
const config = parseConfig({
  CDP_API_KEY: 'sk_queue_test',
  CDP_BASE_URL: 'https://upstream.test',
  RELAY_SITES: JSON.stringify([{ key: 'pk_q', origins: [ORIGIN], verify: 'open' }]),
});
const track = (n: number) => ({
  id: `item-${n}-${crypto.randomUUID()}`,
  type: 'track',
  activity_id: 'act:cm:viewed',
  person: { 'str::email': `q${n}@example.com` },
});
const post = (app: ReturnType<typeof createRelay>, batch: unknown[]) =>
  app.request('/collect', { method: 'POST', headers: { origin: ORIGIN, 'content-type': 'text/plain' }, body: JSON.stringify({ key: 'pk_q', batch }) });
const statuses = async (response: Response) => ((await response.json()) as { results: { status: string }[] }).results.map((r) => r.status);

/** A queue whose sendBatch fails on the calls named in `failOn` (1-based), keeping what it took. */
function flakyQueue(failOn: number[]) {
  const taken: OutboxItem[] = [];
  let calls = 0;
  const queue = {
    async sendBatch(messages: Iterable<{ body: unknown }>) {
      calls++;
      if (failOn.includes(calls)) throw new Error(`queue unavailable (call ${calls})`);
      for (const message of messages) taken.push(message.body as OutboxItem);
    },
  };
  // The producer only calls sendBatch; the rest of the binding's surface is never touched.
  return { taken, queue: queue as unknown as Queue };
}

describe('the producer', () => {
  it('reports what earlier batches took when a later batch fails, instead of throwing it all away', async () => {
    const { queue, taken } = flakyQueue([2]);
    const entries = Array.from({ length: 150 }, (_, i) => ({
      site: 'pk_q',
      id: `e${i}`,
      kind: 'activity' as const,
      entry: {},
      browser: 'b',
      visitor: 'v',
      accepted: 0,
    }));
    const result = await queueProducer(queue)(entries);
    expect(result.taken).toEqual(entries.slice(0, 100).map((entry) => entry.id));
    expect(String(result.failure)).toContain('queue unavailable (call 2)');
    expect(taken).toHaveLength(100);
  });
});

describe('/collect with a queue', () => {
  it('answers accepted for what the queue took and retry for the rest; a resend is queued again (the consumer drops the copy)', async () => {
    const { queue, taken } = flakyQueue([1]);
    // One entry per sendBatch, so the first fails and the second succeeds.
    const enqueue = async (entries: OutboxItem[]) => {
      const ids: string[] = [];
      for (const entry of entries) {
        const result = await queueProducer(queue)([entry]);
        if (result.failure !== undefined) continue;
        ids.push(...result.taken);
      }
      return ids.length === entries.length ? { taken: ids } : { taken: ids, failure: new Error('one batch failed') };
    };
    const app = createRelay(config, { store: createMemoryStore(), enqueue, logger: () => {} });
    const batch = [track(1), track(2)];
    expect(await statuses(await post(app, batch))).toEqual(['retry', 'accepted']);
    expect(await statuses(await post(app, batch))).toEqual(['accepted', 'accepted']);
    expect(taken.map((entry) => entry.id)).toEqual([batch[1]!.id, batch[0]!.id, batch[1]!.id]);
  });

  it('makes no state call per request: ids are checked by the consumer, where they are already batched', async () => {
    const { queue, taken } = flakyQueue([]);
    const store = createMemoryStore();
    const unreachable = async () => {
      throw new Error('state unreachable');
    };
    store.claim = unreachable;
    store.settle = unreachable;
    const lines: LogLine[] = [];
    const app = createRelay(config, { store, enqueue: queueProducer(queue), logger: (line) => lines.push(line) });
    expect(await statuses(await post(app, [track(3)]))).toEqual(['accepted']);
    expect(taken).toHaveLength(1);
    expect(lines[0]).toMatchObject({ status: 200 });
    expect(lines[0]).not.toHaveProperty('warning');
  });
});
