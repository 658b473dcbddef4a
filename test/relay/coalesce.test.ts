// Joined platform calls: the activities/create calls of requests handled together go as one, and
// each request still gets exactly the results its own call would have given. Units drive
// `forward` with an injected fetch; the end-to-end part runs startRelay (the Node entry, where
// joining is on) over real HTTP in front of the emulator and injects failures at the platform.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCoalescer } from '../../src/relay/collect/coalesce.js';
import { forward, type EndpointCall } from '../../src/relay/deliver/calls.js';
import type { SendContext } from '../../src/relay/deliver/send.js';
import { silentLogger } from '../../src/relay/logging.js';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';
import { upstreamControl, type UpstreamControl } from './support/control.js';
import { fetchUpstream } from './support/fetch-upstream.js';
import { startUpstreamStack, UPSTREAM_KEY, type UpstreamStack } from './support/stack.js';

interface Entry {
  activity_id: string;
  fields: Record<string, string>;
}
interface Call {
  body: { merge_by?: string[]; activities: Entry[] };
}

function joined(answer: (call: Call, index: number) => Response | Promise<Response>, maxInFlight?: number) {
  const calls: Call[] = [];
  const fetchImpl = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const call = { body: await new Request(input, init).json() };
    calls.push(call);
    return answer(call, calls.length - 1);
  }) as typeof fetch;
  const upstream = fetchUpstream(fetchImpl);
  const coalesce = createCoalescer(maxInFlight);
  let now = 1_000_000;
  const context = (): SendContext => ({
    upstream,
    clock: {
      now: () => now,
      sleep: async (ms) => {
        now += ms;
      },
    },
    deadline: now + 10_000,
    random: () => 0.5,
    statuses: [],
    coalesce,
  });
  return { calls, context };
}

/** One call in flight at a time, each answered (`queued`) only when the test calls its `answers` entry. */
function held() {
  const answers: (() => void)[] = [];
  const platform = joined(
    (call) =>
      new Promise<Response>((resolve) => {
        answers.push(() => resolve(queued(call)));
      }),
    1,
  );
  return { ...platform, answers };
}

/** The end of this turn of the event loop: what was joined in it has gone. */
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** A request's track group: `count` entries named `<request>-<n>`. */
const request = (name: string, count: number, envelope: Record<string, unknown> = { merge_by: ['str::email'] }): EndpointCall => ({
  endpoint: 'activities/create',
  envelope,
  entries: Array.from({ length: count }, (_, n) => ({
    id: `${name}-${n}`,
    entry: { activity_id: 'act:cm:x', fields: { 'str::email': `${name}-${n}@example.com` } },
  })),
});

const emailOf = (entry: Entry) => entry.fields['str::email']!;
const queued = (call: Call) =>
  Response.json({
    activities: call.body.activities.map((entry) =>
      emailOf(entry).startsWith('bad') ? { status: 'invalid', error: 'no such person' } : { status: 'queued', person_status: 'queued' },
    ),
  });

describe('joined activities/create calls', () => {
  it('sends the calls of requests forwarded together as one, in order, and hands each its own answers', async () => {
    const { calls, context } = joined(queued);
    const [a, b, c] = await Promise.all([
      forward(context(), [request('a', 2)]),
      forward(context(), [request('bad', 1)]),
      forward(context(), [request('c', 3)]),
    ]);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.body.merge_by).toEqual(['str::email']);
    expect(calls[0]!.body.activities.map(emailOf)).toEqual([
      'a-0@example.com',
      'a-1@example.com',
      'bad-0@example.com',
      'c-0@example.com',
      'c-1@example.com',
      'c-2@example.com',
    ]);
    expect([...a!.results.values()].map((r) => [r.id, r.status])).toEqual([
      ['a-0', 'accepted'],
      ['a-1', 'accepted'],
    ]);
    expect(b!.results.get('bad-0')).toEqual({ id: 'bad-0', status: 'rejected', error: expect.stringContaining('no such person') });
    expect([...c!.results.values()].every((r) => r.status === 'accepted')).toBe(true);
  });

  it('joins only calls with the same envelope and never more than 100 entries per call', async () => {
    const { calls, context } = joined(queued);
    await Promise.all([
      forward(context(), [request('a', 40)]),
      forward(context(), [request('b', 40)]),
      forward(context(), [request('c', 40)]),
      forward(context(), [request('d', 5, { merge_by: ['str::ei'] })]),
    ]);
    const sizes = calls.map((call) => [call.body.merge_by?.[0], call.body.activities.length]);
    expect(sizes).toHaveLength(3);
    expect(sizes).toEqual(
      expect.arrayContaining([
        ['str::email', 80],
        ['str::email', 40],
        ['str::ei', 5],
      ]),
    );
  });

  it('gathers the calls made while the earlier ones are in flight into one, and answers a call that waited past its deadline with retry', async () => {
    const { calls, context, answers } = held();
    const first = forward(context(), [request('a', 1)]);
    await turn();
    await turn();
    const waiting = [forward(context(), [request('b', 1)]), forward(context(), [request('c', 2)])];
    await turn();
    const late = forward({ ...context(), deadline: 0 }, [request('late', 1)]);
    await turn();
    expect(calls).toHaveLength(1);
    answers.shift()!();
    expect([...(await first).results.values()].map((r) => r.status)).toEqual(['accepted']);
    expect([...(await late).results.values()].map((r) => r.status)).toEqual(['retry']);
    await turn();
    expect(calls).toHaveLength(2);
    expect(calls[1]!.body.activities.map(emailOf)).toEqual(['b-0@example.com', 'c-0@example.com', 'c-1@example.com']);
    answers.shift()!();
    const [b, c] = await Promise.all(waiting);
    expect([...b!.results.values(), ...c!.results.values()].map((r) => r.status)).toEqual(['accepted', 'accepted', 'accepted']);
  });

  it('sends a full call at once, even while others are in flight: waiting could not make it fuller', async () => {
    const { calls, context, answers } = held();
    const first = forward(context(), [request('a', 100)]);
    await turn();
    const second = forward(context(), [request('b', 100)]);
    const third = [forward(context(), [request('c', 60)]), forward(context(), [request('d', 60)])];
    await turn();
    await turn();
    // a and b are full; c fills a call that d does not fit in, so c goes too; d waits for a slot.
    expect(calls.map((call) => call.body.activities.length)).toEqual([100, 100, 60]);
    for (const answer of answers.splice(0)) answer();
    await Promise.all([first, second, third[0]]);
    await turn();
    expect(calls.map((call) => call.body.activities.length)).toEqual([100, 100, 60, 60]);
    answers.shift()!();
    expect([...(await third[1]!).results.values()].every((r) => r.status === 'accepted')).toBe(true);
  });

  it('keeps every item of every request (retry) when the joined call gets nothing through', async () => {
    const { calls, context } = joined(() => new Response('down', { status: 503 }));
    const contexts = [context(), context()];
    const out = await Promise.all([forward(contexts[0]!, [request('a', 2)]), forward(contexts[1]!, [request('b', 1)])]);
    expect(out.flatMap((o) => [...o.results.values()].map((r) => r.status))).toEqual(['retry', 'retry', 'retry']);
    expect(out.every((o) => o.retryAfter > 0)).toBe(true);
    // One joined call retried within the budget: each request's log sees every attempt.
    expect(calls.length).toBeGreaterThan(1);
    expect(calls.every((call) => call.body.activities.length === 3)).toBe(true);
    for (const ctx of contexts) expect(ctx.statuses).toEqual(calls.map(() => 503));
  });

  it('sends each request alone when the joined call is refused as a whole, so one bad request does not fail the others', async () => {
    const { calls, context } = joined((call) =>
      call.body.activities.some((entry) => emailOf(entry).startsWith('bad'))
        ? Response.json({ code: 400, error: 'bad request' }, { status: 400 })
        : queued(call),
    );
    const [a, bad, c] = await Promise.all([
      forward(context(), [request('a', 2)]),
      forward(context(), [request('bad', 2)]),
      forward(context(), [request('c', 1)]),
    ]);
    expect([...a!.results.values()].map((r) => r.status)).toEqual(['accepted', 'accepted']);
    expect([...c!.results.values()].map((r) => r.status)).toEqual(['accepted']);
    expect([...bad!.results.values()].map((r) => r.status)).toEqual(['rejected', 'rejected']);
    // The joined call, then each request alone; the bad one halved until its entries were alone.
    expect(calls[0]!.body.activities).toHaveLength(5);
    const accepted = calls.filter((call) => !call.body.activities.some((entry) => emailOf(entry).startsWith('bad')));
    expect(accepted.flatMap((call) => call.body.activities.map(emailOf)).sort()).toEqual(['a-0@example.com', 'a-1@example.com', 'c-0@example.com']);
  });

  it('splits per-entry details of a refused joined call back to the request each entry came from', async () => {
    const { calls, context } = joined((call) =>
      Response.json(
        {
          code: 400,
          error: 'No activities created',
          details: call.body.activities.map((entry) => ({ status: 'invalid', error: `refused ${emailOf(entry)}` })),
        },
        { status: 400 },
      ),
    );
    const [a, b] = await Promise.all([forward(context(), [request('a', 1)]), forward(context(), [request('b', 2)])]);
    expect(calls).toHaveLength(1);
    expect(a!.results.get('a-0')!.error).toContain('refused a-0@example.com');
    expect(b!.results.get('b-1')!.error).toContain('refused b-1@example.com');
    expect([...a!.results.values(), ...b!.results.values()].every((r) => r.status === 'rejected')).toBe(true);
  });
});

describe('joined calls in the Node entry, over HTTP in front of the emulator', () => {
  const ORIGIN = 'https://shop.example.com';
  let stack: UpstreamStack;
  let upstream: UpstreamControl;
  let relay: RunningRelay;
  beforeAll(async () => {
    stack = await startUpstreamStack();
    upstream = upstreamControl(stack.url);
    relay = await startRelay({
      port: 0,
      logger: silentLogger,
      env: {
        CDP_API_KEY: UPSTREAM_KEY,
        CDP_BASE_URL: stack.url,
        RELAY_SITES: JSON.stringify([{ key: 'pk_join', origins: [ORIGIN], visitor_rate_limit: { per_second: 1000, burst: 1000 } }]),
      },
    });
  });
  afterAll(async () => {
    await relay?.close();
    await stack?.close();
  });

  const post = async (batch: unknown[]) => {
    const response = await fetch(`${relay.url}/collect`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain' },
      body: JSON.stringify({ key: 'pk_join', batch }),
    });
    return { status: response.status, body: (await response.json()) as { results?: { id: string; status: string }[] } };
  };
  const tracks = (run: string, requests: number, each: number) =>
    Array.from({ length: requests }, (_, r) =>
      Array.from({ length: each }, (_, n) => ({
        id: `${run}-${r}-${n}`,
        type: 'track',
        activity_id: 'act:cm:x',
        person: { 'str::email': `${run}-${r}-${n}@join.example.com` },
      })),
    );
  /** Each item id → how many times the platform took it (answered 200). */
  const taken = async () => {
    const counts = new Map<string, number>();
    for (const call of await upstream.received()) {
      if (call.path !== '/v1/activities/create' || call.status !== 200) continue;
      for (const entry of call.body.activities as Entry[]) counts.set(emailOf(entry), (counts.get(emailOf(entry)) ?? 0) + 1);
    }
    return counts;
  };

  it('forwards concurrent requests in fewer platform calls, each item accepted and taken exactly once', async () => {
    await upstream.reset();
    // A platform slower than the visitors: while the first calls are in flight, the rest gather.
    await upstream.always({ delayMs: 200 });
    const batches = tracks('many', 24, 2);
    const answers = await Promise.all(batches.map(post));
    await upstream.always(undefined);
    expect(answers.every((a) => a.status === 200 && a.body.results!.every((r) => r.status === 'accepted'))).toBe(true);
    const calls = (await upstream.received()).filter((call) => call.path === '/v1/activities/create');
    expect(calls.length).toBeLessThanOrEqual(12);
    const counts = await taken();
    expect(counts.size).toBe(48);
    expect([...counts.values()].every((count) => count === 1)).toBe(true);
  });

  it('loses and duplicates nothing when joined calls fail: retried inside the relay, then re-sent by the browsers', async () => {
    await upstream.reset();
    // The first joined call fails every attempt (its items come back as retry), the next gets no
    // answer at all (retried inside the relay); the rest get through.
    await upstream.faults([{ status: 503 }, { status: 503 }, { status: 503 }, { status: 503 }, { drop: true }]);
    const batches = tracks('faulty', 12, 3);
    let pending = batches;
    for (let round = 0; round < 5 && pending.length > 0; round++) {
      const answers = await Promise.all(pending.map(post));
      // What a browser does: keep what was not accepted (or known), and send it again.
      pending = pending
        .map((batch, b) => batch.filter((_, i) => !['accepted', 'duplicate'].includes(answers[b]!.body.results?.[i]?.status ?? '')))
        .filter((batch) => batch.length > 0);
    }
    expect(pending).toEqual([]);
    const counts = await taken();
    expect(counts.size).toBe(36);
    expect([...counts.entries()].filter(([, count]) => count !== 1)).toEqual([]);
  });
});
