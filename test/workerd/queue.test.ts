// The Queues path in workerd, with a real queue, its real consumer and the real outbox objects:
// every item the relay answered `accepted` for reaches the platform once, whatever fails around
// the queue. Each failure is injected: a second sendBatch that fails after the first succeeded,
// a copy of a batch queued again, one message delivered twice, and a consumer that dies after the
// outbox took its items but before it acked them.
import { createExecutionContext, createMessageBatch, env, getQueueResult } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import worker from '../../src/relay/cloudflare.js';
import type { OutboxItem } from '../../src/relay/state/outbox.js';
import { upstreamControl } from '../relay/support/control.js';
import { ORIGIN, track } from '../relay/suite/target.js';
import { queuedItem, queueSettled } from './target.js';

const upstream = upstreamControl(env['TEST_UPSTREAM'] as string);
/** The site of test/workerd/wrangler.toml: the queue's consumer runs with that file's vars. */
const SITE = 'pk_queue';

type Status = 'accepted' | 'duplicate' | 'retry' | 'rejected';

function post(vars: Record<string, unknown>, body: unknown): Promise<Response> {
  const request = new Request('https://relay.example.com/collect', {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': '192.0.2.40' },
    body: JSON.stringify(body),
  });
  return worker.fetch(request, { ...env, ...vars } as never, createExecutionContext());
}
const statuses = async (response: Response): Promise<Status[]> => ((await response.json()) as { results: { status: Status }[] }).results.map((r) => r.status);

/** Tracks with their own emails (how the platform's calls are told apart), with twelve custom location values of `padding` characters. */
const tracks = (label: string, count: number, padding = 0) =>
  Array.from({ length: count }, (_, n) =>
    track(
      'act:cm:viewed',
      { 'str::email': `${label}-${n}-${crypto.randomUUID().slice(0, 8)}@example.com` },
      padding > 0 ? { location: { custom: Object.fromEntries(Array.from({ length: 12 }, (_, a) => [`note_${a}`, 'x'.repeat(padding)])) } } : {},
    ),
  );
const emailOf = (item: ReturnType<typeof track>) => (item.person as Record<string, string>)['str::email']!;

/** How many times the platform took each of `emails` (activities/create answered 2xx). */
async function deliveries(emails: string[]): Promise<Map<string, number>> {
  const counts = new Map(emails.map((email) => [email, 0]));
  for (const call of await upstream.received()) {
    if (call.path !== '/v1/activities/create' || call.status < 200 || call.status > 299) continue;
    for (const activity of call.body.activities ?? []) {
      const email = activity.fields?.['str::email'];
      if (counts.has(email)) counts.set(email, counts.get(email)! + 1);
    }
  }
  return counts;
}

/** Waits (boundedly) until the consumer delivered every email, then until nothing queued can still arrive (a second delivery would have). */
async function settled(emails: string[]): Promise<Map<string, number>> {
  for (let attempt = 0; attempt < 300; attempt++) {
    if ([...(await deliveries(emails)).values()].every((n) => n > 0)) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await queueSettled(upstream);
  return deliveries(emails);
}

/** A track as the queue carries it: the outbox item /collect's producer sends. */
const queued = (item: ReturnType<typeof track>) => queuedItem(item.id, emailOf(item));

const once = (counts: Map<string, number>) => [...counts.values()].every((n) => n === 1);

/** The test queue, failing the sendBatch calls numbered in `failOn` (1-based) before they reach it. */
function failingQueue(failOn: number[]) {
  const queue = env['TEST_QUEUE'] as { sendBatch(messages: Iterable<unknown>): Promise<unknown> };
  let calls = 0;
  return {
    sendBatch: async (messages: Iterable<unknown>) => {
      calls++;
      if (failOn.includes(calls)) throw new Error(`queue unavailable (sendBatch ${calls})`);
      return queue.sendBatch(messages);
    },
    get calls() {
      return calls;
    },
  };
}

describe('the Queues path delivers every accepted item once', () => {
  it('a second sendBatch that fails after the first: what the queue took is accepted, only the rest is resent, and each item arrives once', async () => {
    // 100 items of ~3 kB need two sendBatch calls (Queues take 256 kB per call); the second fails.
    const batch = tracks('second-batch', 100, 250);
    const queue = failingQueue([2]);
    const body = { key: SITE, queue: crypto.randomUUID(), batch };
    const first = await statuses(await post({ RELAY_QUEUE: queue }, body));
    expect(queue.calls).toBe(2);
    const taken = first.filter((status) => status === 'accepted').length;
    expect(taken).toBeGreaterThan(0);
    expect(first.slice(taken).every((status) => status === 'retry')).toBe(true);

    // The browser resends what got `retry` (and, its answer lost, the rest too): all queued again;
    // the consumer delivers what was queued twice once.
    const again = await statuses(await post({ RELAY_QUEUE: failingQueue([]) }, body));
    expect(again).toEqual(first.map(() => 'accepted'));
    expect(once(await settled(batch.map(emailOf)))).toBe(true);
  });

  it('a copy of a batch sent later under another queue id is queued again and delivered once', async () => {
    const batch = tracks('copy', 3);
    const vars = { RELAY_QUEUE: env['TEST_QUEUE'] };
    expect(await statuses(await post(vars, { key: SITE, queue: crypto.randomUUID(), batch }))).toEqual(['accepted', 'accepted', 'accepted']);
    expect(once(await settled(batch.map(emailOf)))).toBe(true);
    // Another tab's queue, a beacon: the same ids under another `queue` value, after delivery.
    expect(await statuses(await post(vars, { key: SITE, queue: crypto.randomUUID(), batch }))).toEqual(['accepted', 'accepted', 'accepted']);
    expect(once(await settled(batch.map(emailOf)))).toBe(true);
  });

  it('the same message delivered twice by the queue reaches the platform once', async () => {
    const [item] = tracks('twice', 1);
    const entry = queued(item!);
    const queue = env['TEST_QUEUE'] as { sendBatch(messages: { body: OutboxItem }[]): Promise<unknown> };
    await queue.sendBatch([{ body: entry }]);
    await queue.sendBatch([{ body: entry }]);
    expect(once(await settled([emailOf(item!)]))).toBe(true);
  });

  it('a consumer that dies after the outbox took its items, before acking: the redelivery is acked, and each item reaches the platform once', async () => {
    const items = tracks('crash', 3);
    const messages = items.map((item) => ({ id: `crash-${item.id}`, timestamp: Date.now(), attempts: 1, body: queued(item) }));
    // The run dies at its ack: the outbox has the items, the queue heard nothing.
    const dying = {
      queue: 'relay-test-events',
      messages,
      ackAll() {
        throw new Error('the isolate went away');
      },
      retryAll() {
        throw new Error('the isolate went away');
      },
    };
    await expect(worker.queue(dying as never, env as never)).rejects.toThrow('the isolate went away');

    // The queue delivers the messages again (attempt 2): acked; the outbox knows the ids.
    const redelivered = createMessageBatch(
      'relay-test-events',
      messages.map((message) => ({ ...message, attempts: 2 })),
    );
    const ctx = createExecutionContext();
    await worker.queue(redelivered, env as never);
    const result = await getQueueResult(redelivered, ctx);
    expect(result.ackAll).toBe(true);
    expect(result.retryMessages).toEqual([]);
    expect(once(await settled(items.map(emailOf)))).toBe(true);
  });
});
