// Forwarding units with an injected fetch and clock: chunking, the 429 wait, the shared
// backoff, retries within the budget. No sockets: what is checked is what was called when.
import { describe, expect, it } from 'vitest';
import { forward, type EndpointCall } from '../../src/relay/deliver/calls.js';
import type { SendContext } from '../../src/relay/deliver/send.js';
import type { Clock } from '../../src/relay/core/clock.js';
import { fetchUpstream } from './support/fetch-upstream.js';

interface Call {
  path: string;
  body: { people: unknown[]; activities: unknown[] };
  at: number;
}

function fakeClock(start = 1_000_000): Clock & { sleeps: number[] } {
  let now = start;
  const sleeps: number[] = [];
  const sleep = async (ms: number) => {
    sleeps.push(ms);
    now += ms;
  };
  return { sleeps, now: () => now, sleep };
}

function context(answer: (call: Call, index: number) => Response | Promise<Response>, clock = fakeClock(), budgetMs = 10_000, timeout = 10_000) {
  const calls: Call[] = [];
  const fetchImpl = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const call = { path: new URL(request.url).pathname, body: await request.json(), at: clock.now() };
    calls.push(call);
    return answer(call, calls.length - 1);
  }) as typeof fetch;
  const upstream = fetchUpstream(fetchImpl, { now: () => clock.now(), timeoutMs: timeout });
  const ctx: SendContext = { upstream, clock, deadline: clock.now() + budgetMs, random: () => 0.5, statuses: [] };
  return { ctx, calls, clock };
}

const ok = (call: Call) =>
  Response.json(
    call.path.endsWith('merge')
      ? { people: call.body.people.map(() => ({ person_id: '00'.repeat(12), status: 'created' })) }
      : { activities: call.body.activities.map(() => ({ status: 'queued' })) },
  );
const rateLimited = (seconds: number) => Response.json({ error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': seconds } }, { status: 429 });

const activities = (count: number, pad = 0): EndpointCall => ({
  endpoint: 'activities/create',
  envelope: {},
  entries: Array.from({ length: count }, (_, n) => ({
    id: `a${n}`,
    entry: { activity_id: 'act:cm:x', fields: { 'str::email': `p${n}@example.com` }, attributes: { 'str:cm:pad': 'x'.repeat(pad) } },
  })),
});

describe('forward', () => {
  it('splits at 100 entries per call and keeps every result with its item', async () => {
    const { ctx, calls } = context(ok);
    const out = await forward(ctx, [activities(250)]);
    expect(calls.map((call) => call.body.activities.length)).toEqual([100, 100, 50]);
    expect([...out.results.values()].every((result) => result.status === 'accepted')).toBe(true);
    expect(out.results.size).toBe(250);
  });

  it('splits by bytes so no call passes 2 MB', async () => {
    const { ctx, calls } = context(ok);
    await forward(ctx, [activities(100, 30_000)]);
    expect(calls.length).toBeGreaterThan(1);
    for (const call of calls) expect(new TextEncoder().encode(JSON.stringify(call.body)).byteLength).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(calls.reduce((sum, call) => sum + call.body.activities.length, 0)).toBe(100);
  });

  it('waits exactly try-in-seconds after a 429 before calling again', async () => {
    const { ctx, calls, clock } = context((call, index) => (index === 0 ? rateLimited(3) : ok(call)));
    const out = await forward(ctx, [activities(1)]);
    expect(out.results.get('a0')!.status).toBe('accepted');
    expect(clock.sleeps).toEqual([3000]);
    expect(calls[1]!.at - calls[0]!.at).toBe(3000);
  });

  it('answers retry with Retry-After when try-in-seconds is beyond the budget, and the backoff holds the next request back', async () => {
    const clock = fakeClock();
    const { ctx, calls } = context(() => rateLimited(30), clock, 5000);
    const out = await forward(ctx, [activities(2)]);
    expect([...out.results.values()].map((r) => r.status)).toEqual(['retry', 'retry']);
    expect(out.retryAfter).toBe(30);
    expect(calls).toHaveLength(1);
    // Another request during the backoff does not call the platform at all.
    const next = await forward({ ...ctx, deadline: clock.now() + 5000, statuses: [] }, [activities(1)]);
    expect(next.results.get('a0')!.status).toBe('retry');
    expect(calls).toHaveLength(1);
  });

  it('retries what was not applied (503, a connection never made) a bounded number of times with jittered waits inside the budget', async () => {
    const refused = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    const { ctx, calls, clock } = context((_, index) => {
      if (index === 0) return new Response('busy', { status: 503 });
      if (index === 1) throw refused;
      return Response.json({ activities: [{ status: 'queued' }] });
    });
    const out = await forward(ctx, [activities(1)]);
    expect(out.results.get('a0')!.status).toBe('accepted');
    expect(calls).toHaveLength(3);
    expect(clock.sleeps).toHaveLength(2);
    expect(clock.sleeps[1]!).toBeGreaterThan(clock.sleeps[0]!);

    const down = context(() => new Response('down', { status: 503 }));
    const failed = await forward(down.ctx, [activities(1)]);
    expect(failed.results.get('a0')!.status).toBe('retry');
    expect(down.calls.length).toBeLessThanOrEqual(4);
  });

  it('never repeats an activities/create whose outcome is unknown (502, 500, 504, a lost connection); repeats a merge', async () => {
    for (const failure of [() => new Response('oops', { status: 502 }), () => new Response('', { status: 500 }), () => new Response('', { status: 504 })]) {
      const { ctx, calls } = context((call, index) => (index === 0 ? failure() : ok(call)));
      const out = await forward(ctx, [activities(1)]);
      expect(out.results.get('a0')!.status).toBe('retry');
      expect(calls).toHaveLength(1);
    }
    const lost = context((call, index) => {
      if (index === 0) throw new TypeError('fetch failed', { cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) });
      return ok(call);
    });
    expect((await forward(lost.ctx, [activities(1)])).results.get('a0')!.status).toBe('retry');
    expect(lost.calls).toHaveLength(1);

    const merge = context((call, index) => (index === 0 ? new Response('oops', { status: 502 }) : ok(call)));
    const people: EndpointCall = { endpoint: 'person/merge', envelope: {}, entries: [{ id: 'p0', entry: { fields: { 'str::email': 'p@example.com' } } }] };
    expect((await forward(merge.ctx, [people])).results.get('p0')!.status).toBe('accepted');
    expect(merge.calls).toHaveLength(2);
  });

  it('does not repeat an activities/create that timed out (it may have been applied); a merge that timed out goes again', async () => {
    const { ctx, calls } = context((call, index) => (index === 0 ? new Promise<Response>(() => {}) : ok(call)), fakeClock(), 10_000, 50);
    const out = await forward(ctx, [activities(1)]);
    expect(out.results.get('a0')!.status).toBe('retry');
    expect(calls).toHaveLength(1);
    expect(ctx.statuses).toEqual([0]);
    const merge = context((call, index) => (index === 0 ? new Promise<Response>(() => {}) : ok(call)), fakeClock(), 10_000, 50);
    const people: EndpointCall = { endpoint: 'person/merge', envelope: {}, entries: [{ id: 'p0', entry: { fields: { 'str::email': 'p@example.com' } } }] };
    expect((await forward(merge.ctx, [people])).results.get('p0')!.status).toBe('accepted');
    expect(merge.ctx.statuses).toEqual([0, 200]);
  });

  it('keeps items (retry) when the platform refuses the key, without retrying', async () => {
    const { ctx, calls } = context(() => Response.json({ request_id: 'r', code: 401, error: 'Unauthorized' }, { status: 401 }));
    const out = await forward(ctx, [activities(2)]);
    expect([...out.results.values()].map((r) => r.status)).toEqual(['retry', 'retry']);
    expect(out.results.get('a0')!.error).toMatch(/CDP_API_KEY/);
    expect(calls).toHaveLength(1);
  });

  it('maps a merge refused as a whole with per-entry details back to each item', async () => {
    const { ctx } = context(() =>
      Response.json(
        {
          request_id: 'r',
          code: 400,
          error: 'No people merged',
          details: [
            { status: 'invalid', error: 'bad email' },
            { status: 'suppressed', error: 'Email is suppressed' },
          ],
        },
        { status: 400 },
      ),
    );
    const out = await forward(ctx, [
      {
        endpoint: 'person/merge',
        envelope: {},
        entries: [
          { id: 'p1', entry: { fields: {} } },
          { id: 'p2', entry: { fields: {} } },
        ],
      },
    ]);
    expect(out.results.get('p1')).toEqual({ id: 'p1', status: 'rejected', error: expect.stringContaining('bad email') });
    expect(out.results.get('p2')).toEqual({ id: 'p2', status: 'rejected', error: expect.stringContaining('Email is suppressed') });
  });
});
