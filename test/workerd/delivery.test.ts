// The queue consumer as the deliverer, inside workerd with the real state objects (SQLite): each
// id reaches the platform once per site whatever `queue` said, a redelivered batch sends nothing,
// calls are full, ambiguous activities are held as dead letters with their reason, refusals are
// dead letters too, and a 429 holds the deployment's pacer. The platform here is a stand-in on an
// injected fetch that records every call and answers as each test scripts.
import { env, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { Pacer } from '../../src/relay/state/outbox.js';
import type { DeliveryEvent } from '../../src/relay/core/observe.js';
import { deliveryPoint } from '../../src/relay/workers/analytics.js';
import type { AmbiguousPolicy } from '../../src/relay/core/config.js';
import type { QueuedEntry } from '../../src/relay/workers/handoff.js';
import { createDeliveryLedger, createDurablePacer } from '../../src/relay/workers/delivery.js';
import { type ConsumeContext, consumeQueue, type DeadLetterMessage } from '../../src/relay/workers/queue.js';
import type { MessageBatch, Queue, QueueMessage } from '../../src/relay/workers/types.js';
import { fetchUpstream } from '../relay/support/fetch-upstream.js';

const DAY = 86_400_000;
const WINDOW = 7 * DAY;

const activity = (site: string, id = crypto.randomUUID()): QueuedEntry => ({
  site,
  id,
  endpoint: 'activities/create',
  envelope: { merge_by: ['str::email'] },
  entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': `${id}@example.com` } },
});
const merge = (site: string, id = crypto.randomUUID()): QueuedEntry => ({
  site,
  id,
  endpoint: 'person/merge',
  envelope: { merge_by: ['str::email'], merge_strategy: 2 },
  entry: { fields: { 'str::email': `${id}@example.com` } },
});

interface Outcome {
  acked: string[];
  retried: { id: string; delaySeconds: number | undefined }[];
}

/** A batch as the queue hands it over, recording each message's ack or retry. */
function batchOf(entries: QueuedEntry[]): { batch: MessageBatch<QueuedEntry>; outcome: Outcome } {
  const outcome: Outcome = { acked: [], retried: [] };
  const messages = entries.map((body, n) => ({
    id: `m${n}-${body.id}`,
    timestamp: new Date(),
    attempts: 1,
    body,
    ack: () => void outcome.acked.push(body.id),
    retry: (options?: { delaySeconds?: number }) => void outcome.retried.push({ id: body.id, delaySeconds: options?.delaySeconds }),
  })) as unknown as QueueMessage<QueuedEntry>[];
  return { batch: { queue: 'relay-test-events', messages } as unknown as MessageBatch<QueuedEntry>, outcome };
}

interface PlatformCall {
  path: string;
  entries: Record<string, unknown>[];
}

/**
 * The platform stand-in: records what each call carried (applied or not, the caller cannot tell)
 * and answers with `answer`, by default every entry taken.
 */
function platform(answer: (call: PlatformCall) => Response = (call) => Response.json({ [key(call.path)]: call.entries.map(() => ({ status: 'queued' })) })) {
  const calls: PlatformCall[] = [];
  const fetchImpl = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const path = new URL(String(input)).pathname;
    const body = JSON.parse(String(init?.body));
    const call = { path, entries: body[key(path)] as Record<string, unknown>[] };
    calls.push(call);
    return answer(call);
  }) as typeof fetch;
  return { calls, upstream: fetchUpstream(fetchImpl) };
}
const key = (path: string) => (path.endsWith('person/merge') ? 'people' : 'activities');

/** How many times the platform got each activity id (by the email it carries). */
const sends = (calls: PlatformCall[], entries: QueuedEntry[]) =>
  entries.map((entry) => calls.flatMap((call) => call.entries).filter((sent) => JSON.stringify(sent) === JSON.stringify(entry.entry)).length);

function deadLetterQueue() {
  const letters: DeadLetterMessage[] = [];
  const queue = {
    async sendBatch(messages: Iterable<{ body: DeadLetterMessage }>) {
      for (const message of messages) letters.push(message.body);
    },
  };
  // The consumer only calls sendBatch on the dead-letter queue.
  return { letters, queue: queue as unknown as Queue };
}

const namespace = () => env['RELAY_STATE'];

function context(upstream: ConsumeContext['upstream'], options: { now?: number; policy?: AmbiguousPolicy; pacer?: Pacer; deadLetters?: Queue } = {}) {
  // The test's moment, running on with real time (the consumer sleeps for the pacer).
  const offset = (options.now ?? Date.now()) - Date.now();
  const now = Date.now() + offset;
  const dead = deadLetterQueue();
  const ctx: ConsumeContext = {
    upstream,
    ledger: createDeliveryLedger(namespace(), 16),
    // A pacer of its own per test (and fast), so tests do not pace one another.
    pacer: options.pacer ?? createDurablePacer(namespace(), `pacer:test-${crypto.randomUUID()}`, 1000),
    policy: options.policy ?? 'hold',
    deadLetters: options.deadLetters ?? dead.queue,
    windowMs: WINDOW,
    clock: { now: () => Date.now() + offset, sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) },
    deadline: now + 10_000,
  };
  return { ctx, letters: dead.letters };
}

const site = () => `pk_delivery_${crypto.randomUUID().slice(0, 8)}`;

/** The ledger of a consumer whose isolate goes away before it settles: claims and marks land, settles never do. */
const settleNeverLands = (ledger: ConsumeContext['ledger']): ConsumeContext['ledger'] => ({
  claim: ledger.claim,
  sending: ledger.sending,
  settle: async () => {
    throw new Error('the isolate went away');
  },
});
const quiet = () => {};

describe('the consumer delivers each id once per site', () => {
  it('sends full calls, merges first: 250 activities and 20 identifies in 4 calls, and nothing when the batch comes again', async () => {
    const s = site();
    const merges = Array.from({ length: 20 }, () => merge(s));
    const activities = Array.from({ length: 250 }, () => activity(s));
    const { calls, upstream } = platform();
    const { ctx } = context(upstream);
    const first = batchOf([...activities, ...merges]);
    await consumeQueue(first.batch, ctx, quiet);
    expect(calls.map((call) => [call.path, call.entries.length])).toEqual([
      ['/v1/person/merge', 20],
      ['/v1/activities/create', 100],
      ['/v1/activities/create', 100],
      ['/v1/activities/create', 50],
    ]);
    expect(first.outcome.acked).toHaveLength(270);

    // The queue delivers the batch again (a lost ack): acked, not one call.
    const again = batchOf([...activities, ...merges]);
    await consumeQueue(again.batch, ctx, quiet);
    expect(calls).toHaveLength(4);
    expect(again.outcome.acked).toHaveLength(270);
    expect(again.outcome.retried).toEqual([]);
  });

  it('the same id queued under two browser queues (two messages, two batches) reaches the platform once', async () => {
    const s = site();
    const entry = activity(s);
    const { calls, upstream } = platform();
    const { ctx } = context(upstream);
    const one = batchOf([entry, entry]);
    await consumeQueue(one.batch, ctx, quiet);
    await consumeQueue(batchOf([entry]).batch, ctx, quiet);
    expect(sends(calls, [entry])).toEqual([1]);
    expect(one.outcome.acked).toEqual([entry.id, entry.id]);
  });

  it('an item resent at any age within the window is not delivered again; ids differing only in case and dashes are one id', async () => {
    const s = site();
    const entry = activity(s);
    const { calls, upstream } = platform();
    const start = Date.now();
    await consumeQueue(batchOf([entry]).batch, context(upstream, { now: start }).ctx, quiet);
    for (const age of [1000, DAY, 3 * DAY, WINDOW - 60_000]) {
      const later = batchOf([entry]);
      await consumeQueue(later.batch, context(upstream, { now: start + age }).ctx, quiet);
      expect(later.outcome.acked, `resent after ${age} ms`).toEqual([entry.id]);
    }
    const spelled = { ...entry, id: entry.id.toUpperCase().replaceAll('-', '') };
    await consumeQueue(batchOf([spelled]).batch, context(upstream, { now: start + DAY }).ctx, quiet);
    expect(sends(calls, [entry])).toEqual([1]);
  });

  it('another consumer holding the id (a live lease) makes this one wait, not send', async () => {
    const s = site();
    const entry = activity(s);
    const now = Date.now();
    await createDeliveryLedger(namespace(), 16).claim(s, [entry.id], 'another-consumer', now, 60_000, WINDOW);
    const { calls, upstream } = platform();
    const busy = batchOf([entry]);
    await consumeQueue(busy.batch, context(upstream, { now }).ctx, quiet);
    expect(calls).toHaveLength(0);
    expect(busy.outcome.retried).toHaveLength(1);
    expect(busy.outcome.retried[0]!.delaySeconds).toBeGreaterThan(0);
  });
});

describe('outcomes the consumer cannot know are never resent blindly', () => {
  it('activities whose call answered 504 are held as dead letters (reason ambiguous), acked, and not sent again when the message comes back', async () => {
    const s = site();
    const entries = [activity(s), activity(s)];
    const { calls, upstream } = platform(() => Response.json({ code: 504, error: 'gateway timeout' }, { status: 504 }));
    const { ctx, letters } = context(upstream);
    const first = batchOf(entries);
    await consumeQueue(first.batch, ctx, quiet);
    expect(calls).toHaveLength(1);
    expect(first.outcome.acked.sort()).toEqual(entries.map((e) => e.id).sort());
    expect(letters.map((letter) => [letter.id, letter.reason, letter.status])).toEqual(entries.map((e) => [e.id, 'ambiguous', 504]));
    expect(letters[0]).toMatchObject({ entry: entries[0]!.entry, endpoint: 'activities/create', site: s });

    await consumeQueue(batchOf(entries).batch, ctx, quiet);
    expect(calls).toHaveLength(1);
  });

  it('identifies after a 504 go back to the queue (a merge is idempotent), and the same browser’s tracks wait with them', async () => {
    const s = site();
    const identify = merge(s);
    const track = activity(s);
    const { calls, upstream } = platform((call) =>
      call.path.endsWith('person/merge')
        ? Response.json({ code: 504, error: 'gateway timeout' }, { status: 504 })
        : Response.json({ activities: [{ status: 'queued' }] }),
    );
    const { ctx, letters } = context(upstream);
    const run = batchOf([track, identify]);
    await consumeQueue(run.batch, ctx, quiet);
    expect(calls.map((call) => call.path)).toEqual(['/v1/person/merge']);
    expect(letters).toEqual([]);
    const delays = new Map(run.outcome.retried.map((r) => [r.id, r.delaySeconds!]));
    expect(delays.get(track.id)).toBeGreaterThan(delays.get(identify.id)!);
  });

  it('with RELAY_AMBIGUOUS=resend, activities after a 504 go back to the queue instead', async () => {
    const s = site();
    const entry = activity(s);
    const { upstream } = platform(() => Response.json({ code: 502, error: 'bad gateway' }, { status: 502 }));
    const { ctx, letters } = context(upstream, { policy: 'resend' });
    const run = batchOf([entry]);
    await consumeQueue(run.batch, ctx, quiet);
    expect(letters).toEqual([]);
    expect(run.outcome.retried.map((r) => r.id)).toEqual([entry.id]);
  });

  it('a consumer that dies after the platform answered, before settling: a later copy is held, never sent again', async () => {
    const s = site();
    const entry = activity(s);
    const { calls, upstream } = platform();
    const now = Date.now();
    const dying = context(upstream, { now });
    dying.ctx.ledger = settleNeverLands(dying.ctx.ledger);
    await consumeQueue(batchOf([entry]).batch, dying.ctx, quiet);
    expect(calls).toHaveLength(1);

    // The same entry again (a browser's resend), once the dead consumer's lease has run out.
    const later = context(upstream, { now: now + 60_000 });
    const copy = batchOf([entry]);
    await consumeQueue(copy.batch, later.ctx, quiet);
    expect(calls).toHaveLength(1);
    expect(copy.outcome.acked).toEqual([entry.id]);
    expect(later.letters.map((letter) => letter.reason)).toEqual(['ambiguous']);
  });

  it('a consumer that dies after its first call of a batch: only that call’s entries are held, the never-sent rest is delivered once', async () => {
    const s = site();
    const entries = Array.from({ length: 250 }, () => activity(s));
    const { calls, upstream } = platform();
    const now = Date.now();
    // The isolate goes away after its first call: the pacer never grants a second one within the
    // batch's deadline, and nothing it settles lands.
    let granted = 0;
    const stalled: Pacer = { take: async () => (granted++ === 0 ? 0 : 600_000), hold: async () => {} };
    const dying = context(upstream, { now, pacer: stalled });
    dying.ctx.ledger = settleNeverLands(dying.ctx.ledger);
    await consumeQueue(batchOf(entries).batch, dying.ctx, quiet);
    expect(calls.map((call) => call.entries.length)).toEqual([100]);

    // The batch comes back once the dead consumer's leases have run out.
    const later = context(upstream, { now: now + 60_000 });
    const again = batchOf(entries);
    await consumeQueue(again.batch, later.ctx, quiet);
    // Every entry reached the platform once: the first 100 by the dead consumer's call, the rest now.
    expect(sends(calls, entries).filter((count) => count !== 1)).toEqual([]);
    // Held: exactly the entries of the call that was in flight; all acked.
    expect(later.letters.map((letter) => [letter.id, letter.reason])).toEqual(entries.slice(0, 100).map((entry) => [entry.id, 'ambiguous']));
    expect(again.outcome.acked.sort()).toEqual(entries.map((entry) => entry.id).sort());
  });

  it('a dead letter the dead-letter queue does not take stays with its message, which comes back', async () => {
    const s = site();
    const entry = activity(s);
    const { upstream } = platform(() => Response.json({ code: 504, error: 'gateway timeout' }, { status: 504 }));
    const failing = {
      sendBatch: async () => {
        throw new Error('dead-letter queue unavailable');
      },
    } as unknown as Queue;
    const run = batchOf([entry]);
    await consumeQueue(run.batch, context(upstream, { deadLetters: failing }).ctx, quiet);
    expect(run.outcome.acked).toEqual([]);
    expect(run.outcome.retried.map((r) => r.id)).toEqual([entry.id]);
  });
});

describe('refusals and the platform’s pace', () => {
  it('an entry the platform refuses goes to the dead letters with reason refused; the others are delivered', async () => {
    const s = site();
    const [good, bad] = [activity(s), activity(s)];
    const { upstream } = platform((call) =>
      Response.json({ activities: call.entries.map((_, n) => (n === 1 ? { status: 'invalid', error: 'unknown attribute' } : { status: 'queued' })) }),
    );
    const { ctx, letters } = context(upstream);
    const run = batchOf([good!, bad!]);
    await consumeQueue(run.batch, ctx, quiet);
    expect(run.outcome.acked.sort()).toEqual([good!.id, bad!.id].sort());
    expect(letters.map((letter) => [letter.id, letter.reason, letter.error])).toEqual([[bad!.id, 'refused', 'unknown attribute']]);
  });

  it('a 429 holds the pacer for try-in-seconds and the entries come back after that long', async () => {
    const s = site();
    const entry = activity(s);
    const { upstream } = platform(() => Response.json({ error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 7 } }, { status: 429 }));
    const pacer = createDurablePacer(namespace(), `pacer:test-${crypto.randomUUID()}`, 10);
    const now = Date.now();
    const run = batchOf([entry]);
    await consumeQueue(run.batch, context(upstream, { now, pacer }).ctx, quiet);
    expect(run.outcome.retried).toEqual([{ id: entry.id, delaySeconds: 7 }]);
    expect(await pacer.take(Date.now(), 'deliver')).toBeGreaterThan(5_000);
    expect(await pacer.take(Date.now(), 'proxy')).toBeGreaterThan(5_000);
  });
});

describe('what the consumer tells', () => {
  it('one delivery event per call, as the Node deliverer tells it: delivered, refused, ambiguous held; the Analytics Engine point carries the counts', async () => {
    const s = site();
    const [good, bad] = [activity(s), activity(s)];
    const events: DeliveryEvent[] = [];
    let status = 200;
    const { upstream } = platform((call) =>
      status === 200
        ? Response.json({ activities: call.entries.map((_, n) => (n === 1 ? { status: 'invalid', error: 'unknown attribute' } : { status: 'queued' })) })
        : Response.json({ code: status, error: 'gateway timeout' }, { status }),
    );
    const { ctx } = context(upstream);
    ctx.observe = (event) => events.push(event);
    await consumeQueue(batchOf([good!, bad!]).batch, ctx, quiet);
    status = 504;
    const [late] = [activity(s)];
    await consumeQueue(batchOf([late!]).batch, ctx, quiet);
    expect(events.map((e) => [e.endpoint, e.status, e.called, e.delivered, e.dead.map((d) => d.reason), e.ambiguous.map((a) => a.id), e.held])).toEqual([
      ['activities/create', 200, true, 1, ['refused'], [], true],
      ['activities/create', 504, true, 0, [], [late!.id], true],
    ]);
    expect(deliveryPoint(events[1]!)).toEqual({
      indexes: ['activities/create'],
      blobs: ['delivery', 'activities/create', '504', 'held'],
      doubles: [1, 0, 504, 0, 0, 0, 1, 1],
    });
  });
});

describe('what the ledger keeps', () => {
  it('a delivered id costs under 100 bytes of the object’s SQLite, and expired ids are swept by the alarm', async () => {
    const s = site();
    const ledger = createDeliveryLedger(namespace(), 1); // one object, to weigh it
    const stub = namespace().get(namespace().idFromName(`delivered:${s}#0`));
    const size = () => runInDurableObject(stub, (_, state) => state.storage.sql.databaseSize);
    const now = Date.now();
    const deliver = async (count: number) => {
      for (let done = 0; done < count; done += 500) {
        const ids = Array.from({ length: 500 }, () => crypto.randomUUID());
        await ledger.claim(s, ids, 'weigh', now, 60_000, 1000);
        await ledger.settle(s, 'weigh', { delivered: ids, dead: [], released: [] }, now + 1000);
      }
    };
    await deliver(500); // the tables exist
    const before = await size();
    const COUNT = 10_000;
    await deliver(COUNT);
    const perId = ((await size()) - before) / COUNT;
    console.log(`delivery ledger: ${perId.toFixed(1)} bytes per delivered id (object SQLite, ${COUNT} ids)`);
    expect(perId).toBeLessThan(100);

    // The window (1 s here) passes: the object's alarm deletes what expired.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    while (await runDurableObjectAlarm(stub)) {}
    const usage = (await (stub as unknown as { usage(): Promise<{ delivered: number }> }).usage()).delivered;
    expect(usage).toBe(0);
  }, 60_000);
});
