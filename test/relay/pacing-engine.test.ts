// The delivery engine's pace against the platform's one-second windows, in simulated time: the
// real engine (deliverRound: leases, merges before tracks, slots, the spacer, settles) on the
// memory outbox and pacer, each store step taking 1–8 ms as an SQLite commit with its fsync does,
// every timer waking 0–3 ms late, and a platform answering 40–60 ms after a call arrives, counted
// by the emulator's own rate limiter. A backlog of steady traffic is delivered at the key's allowed
// rate (less the measured margin), in full calls, with no 429.
import { describe, expect, it } from 'vitest';
import { ENDPOINTS } from '../../src/api/index.js';
import { createRateLimiter } from '../../src/emulator/rate-limit.js';
import type { Upstream, UpstreamAnswer } from '../../src/relay/deliver/caller.js';
import { deliverRound } from '../../src/relay/deliver/round.js';
import { HOLD_MS } from '../../src/relay/deliver/holds.js';
import { createSpacer } from '../../src/relay/deliver/spacer.js';
import { SEND_MARGIN } from '../../src/relay/state/pace.js';
import { createMemoryOutbox, createMemoryPacer } from '../../src/relay/state/memory-outbox.js';
import type { Outbox, OutboxItem, Pacer } from '../../src/relay/state/outbox.js';
import { CATCH_UP_MS } from '../../src/relay/state/pace.js';

/** A seeded generator, so a run is the same every time. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

/**
 * Simulated time: timers fire in order of their time once nothing else can run. `busy`: a relay
 * whose event loop also serves /collect, as the bench's business key's: store steps take up to 16 ms
 * and timers wake up to 10 ms late (8 and 3 otherwise).
 */
function simulation(seed: number, busy = false) {
  const next = random(seed);
  const lateMs = busy ? 10 : 3;
  let now = 1_000_000;
  const timers: { at: number; fire: () => void }[] = [];
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      timers.push({ at: now + Math.max(0, ms), fire: resolve });
    });
  return {
    next,
    now: () => now,
    sleep,
    /** a store step's longest time (ms) */
    stepMs: busy ? 16 : 8,
    /** a timer: wakes 0–3 ms late (0–10 busy), as a busy event loop's do */
    nap: (ms: number) => sleep(ms + next() * lateMs),
    /** Runs until `work` settles: each step, everything runnable runs, then time moves to the next timer. */
    async run<T>(work: Promise<T>): Promise<T> {
      let done = false;
      const result = work.finally(() => {
        done = true;
      });
      while (!done) {
        // Everything runnable now runs (promise chains, then their own next steps).
        await new Promise((resolve) => setImmediate(resolve));
        if (done || timers.length === 0) continue;
        timers.sort((a, b) => a.at - b.at);
        const timer = timers.shift()!;
        now = Math.max(now, timer.at);
        timer.fire();
      }
      return await result;
    },
  };
}

type Sim = ReturnType<typeof simulation>;

/** Each store step takes 1–8 ms of simulated time (1–16 busy), as an SQLite commit with its fsync does. */
function slow<T extends object>(sim: Sim, target: T): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        await sim.sleep(1 + sim.next() * (sim.stepMs - 1));
        return await value.apply(object, args);
      };
    },
  });
}

/** A platform of `rate` calls a second (the emulator's limiter), 0–5 ms away, answering 40–60 ms after a call arrives. */
function platform(sim: Sim, rate: number) {
  const limiter = createRateLimiter(rate, sim.now);
  const calls = {
    made: 0,
    limited: 0,
    entries: 0,
    first: 0,
    last: 0,
    merges: 0,
    mergeEntries: 0,
    mergesAt: [] as number[],
    arrived: new Map<string, number>(),
  };
  const upstream: Upstream = {
    backoff: { until: 0 },
    holdMs: () => 0,
    async call(endpoint, body): Promise<UpstreamAnswer> {
      await sim.sleep(sim.next() * 5);
      calls.made++;
      calls.first ||= sim.now();
      calls.last = sim.now();
      if (limiter.take() !== undefined) {
        calls.limited++;
        return { status: 429, contentType: undefined, retryAfter: '1', body: null, holdSeconds: 1 };
      }
      const parsed = JSON.parse(body) as { activities?: { fields?: Record<string, string> }[]; people?: unknown[] };
      const count = (parsed.activities ?? parsed.people ?? []).length;
      for (const activity of parsed.activities ?? []) calls.arrived.set(activity.fields?.['str::email'] ?? '', sim.now());
      calls.entries += count;
      if (endpoint.id === ENDPOINTS['person/merge'].id) {
        calls.mergesAt.push(sim.now());
        calls.merges++;
        calls.mergeEntries += count;
      }
      await sim.sleep(40 + sim.next() * 20);
      const answer =
        endpoint.id === ENDPOINTS['person/merge'].id
          ? { people: Array.from({ length: count }, (_, i) => ({ person_id: i.toString(16).padStart(24, '0'), status: 'merged' })) }
          : { activities: Array.from({ length: count }, () => ({ status: 'queued', person_status: 'queued' })) };
      return { status: 200, contentType: 'application/json', retryAfter: undefined, body: new TextEncoder().encode(JSON.stringify(answer)) };
    },
  };
  return { upstream, calls };
}

/**
 * `count` items in the order the bench's browsers send them (bench/lib/browsers.ts): 500 browsers
 * in turn, each sending batches of 1–3 items; each visitor's 14 items begin with its identify,
 * then a new visitor takes the browser's place: 7% merges. Steady traffic: the browsers' visitors
 * are at every stage of their visit when the backlog begins (those past their identify had it
 * delivered before). `fresh`: every browser begins with a new visitor, as when the bench's
 * browsers start: 500 identifies first, each holding its browser's tracks, and they come together
 * again each time the browsers' visitors change.
 */
function backlog(count: number, now: number, next: () => number, fresh = false): OutboxItem[] {
  const items: OutboxItem[] = [];
  const slots = Array.from({ length: 500 }, (_, slot) => ({ visitor: slot, made: fresh ? 0 : slot % 14 }));
  let visitors = slots.length;
  for (let slot = 0; items.length < count; slot = (slot + 1) % slots.length) {
    const browser = slots[slot]!;
    for (let size = 1 + Math.floor(next() * 3); size > 0 && items.length < count; size--) {
      if (browser.made === 14) Object.assign(browser, { visitor: visitors++, made: 0 });
      const fields = { 'str::email': `v${browser.visitor}@example.com` };
      const base = {
        site: 'pk_p',
        id: `item-${items.length}`,
        browser: `b${browser.visitor}`,
        visitor: `10.0.${browser.visitor >> 8}.${browser.visitor & 255}`,
        accepted: now,
      };
      items.push(
        browser.made++ === 0 ? { ...base, kind: 'merge', entry: { fields } } : { ...base, kind: 'activity', entry: { activity_id: 'act:cm:viewed', fields } },
      );
    }
  }
  return items;
}

/** Runs one round of the real engine in simulated time until `outbox` has nothing ready, with the Node relay's pacer (its one deliverer may catch up: state/pace.ts) unless given another. */
async function drain(
  sim: Sim,
  outbox: Outbox,
  upstream: Upstream,
  rate: number,
  pacer: Pacer = slow(sim, createMemoryPacer(rate, CATCH_UP_MS)),
): Promise<void> {
  await sim.run(
    deliverRound({
      outbox,
      pacer,
      upstream,
      clock: { now: sim.now, sleep: sim.sleep },
      nap: sim.nap,
      spacer: createSpacer(rate),
      rate,
      sites: new Map(),
      ambiguous: 'hold',
      owner: 'sim',
      deadline: Number.POSITIVE_INFINITY,
    }),
  );
}

async function deliverBacklog(rate: number, seed: number, { fresh = false, busy = false } = {}) {
  const sim = simulation(seed, busy);
  const memory = createMemoryOutbox();
  const seconds = 10;
  await memory.accept(backlog(rate * 100 * seconds, sim.now(), sim.next, fresh), sim.now(), 86_400_000);
  const outbox: Outbox = slow(sim, memory);
  const { upstream, calls } = platform(sim, rate);
  await drain(sim, outbox, upstream, rate);
  expect((await memory.stats()).pending).toBe(0);
  return {
    ...calls,
    perSecond: ((calls.made - 1) * 1000) / (calls.last - calls.first),
    perCall: calls.entries / calls.made,
    perMergeCall: calls.mergeEntries / calls.merges,
  };
}

describe('the engine delivers a backlog at the allowed rate', () => {
  it.each([10, 30])('at %i calls/s, with slow store steps and late timers: no 429, at the rate less the margin, full calls', async (rate) => {
    const result = await deliverBacklog(rate, 1);
    expect(result.limited).toBe(0);
    expect(result.perSecond).toBeGreaterThan((rate / (1 + SEND_MARGIN)) * 0.98);
    // Full calls: the bench's target of at least 90 entries a call.
    expect(result.perCall).toBeGreaterThan(90);
    // Merge calls too, though a lease holds a few identifies (one a visitor, 7%): a partial one waits
    // to fill (sent as they were: 55–65 entries a merge call; the backlog's last leases are partial).
    expect(result.perMergeCall).toBeGreaterThan(80);
  });
});

describe('a backlog on a busy relay', () => {
  it('goes at the allowed rate when store steps take up to 16 ms and timers wake up to 10 ms late: a call’s mark begins before its place, not after', async () => {
    const rate = 30;
    const result = await deliverBacklog(rate, 1, { busy: true });
    expect(result.limited).toBe(0);
    // Marked only once its place had come, each call went a mark's time late, and the key's window
    // counted it from then: 27.5–27.8 calls a second (0.94–0.95 of the rate less the margin, seeds
    // 1–3). The mark begun as long before as marks took: 28.2–28.5 (0.96–0.97).
    expect(result.perSecond).toBeGreaterThan((rate / (1 + SEND_MARGIN)) * 0.955);
    expect(result.perCall).toBeGreaterThan(90);
  });
});

describe('a backlog of new visitors, each browser’s identify first', () => {
  it('goes at the allowed rate: merge calls naming no one in common overlap, so runs of merge calls leave no hole in the key’s calls', async () => {
    const rate = 30;
    const result = await deliverBacklog(rate, 1, { fresh: true });
    expect(result.limited).toBe(0);
    // Merge calls one at a time, each waiting for the one before's answer: 27.2–27.4 calls a second
    // (0.93–0.94 of the rate less the margin, seeds 1–3); the people of each call apart: 28.7–28.8 (0.98).
    expect(result.perSecond).toBeGreaterThan((rate / (1 + SEND_MARGIN)) * 0.96);
    expect(result.perCall).toBeGreaterThan(90);
  });
});

describe('the first call after a pause, a probe', () => {
  it('is the only one marked sending until it is answered, where the pacer keeps no shared window (Workers)', async () => {
    const rate = 10;
    const sim = simulation(3, true);
    const memory = createMemoryOutbox();
    const tracks = Array.from(
      { length: 1_000 },
      (_, n): OutboxItem => ({
        site: 'pk_p',
        id: `t-${n}`,
        browser: `b${n % 50}`,
        visitor: `10.3.0.${n % 50}`,
        accepted: sim.now(),
        kind: 'activity',
        entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': `t${n % 50}@example.com` } },
      }),
    );
    await memory.accept(tracks, sim.now(), 86_400_000);
    const marks: number[] = [];
    const outbox = slow(sim, memory);
    const marking: Outbox = {
      ...outbox,
      sending: (...args) => {
        marks.push(sim.now());
        return outbox.sending(...args);
      },
    };
    // The platform takes 800 ms to answer the first call, 40–60 ms the others.
    const { upstream, calls } = platform(sim, rate);
    let answered = Number.POSITIVE_INFINITY;
    const probed: Upstream = {
      ...upstream,
      call: async (endpoint, body, options) => {
        if (calls.made > 0) return upstream.call(endpoint, body, options);
        await sim.sleep(740);
        const answer = await upstream.call(endpoint, body, options);
        answered = sim.now();
        return answer;
      },
    };
    const { leave: _shared, stepsWith: _step, ...pacer } = slow(sim, createMemoryPacer(rate));
    await drain(sim, marking, probed, rate, pacer);
    expect(calls.made).toBe(10);
    expect(answered).toBeLessThan(Number.POSITIVE_INFINITY);
    // A platform that stopped answering would leave the probe's entries in doubt, none of the next call's.
    expect(marks.filter((at) => at < answered)).toHaveLength(1);
  });
});

describe('a partial call held back to fill', () => {
  it('goes within the hold bound: a lone identify in a long backlog of tracks is not kept to its end', async () => {
    const rate = 10;
    const sim = simulation(5);
    const memory = createMemoryOutbox();
    const start = sim.now();
    // 5,000 tracks of 500 browsers whose identifies went before (5 s of full calls at 10 a second)…
    const track = (n: number): OutboxItem => ({
      site: 'pk_p',
      id: `t-${n}`,
      browser: `b${n % 500}`,
      visitor: `10.1.${(n % 500) >> 8}.${(n % 500) & 255}`,
      accepted: start,
      kind: 'activity',
      entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': `t${n % 500}@example.com` } },
    });
    const tracks = Array.from({ length: 5_000 }, (_, n) => track(n));
    // …and one new visitor's identify among them: every lease is full, its merge call holds one entry.
    const identify: OutboxItem = {
      site: 'pk_p',
      id: 'lone',
      browser: 'b-new',
      visitor: '10.2.0.1',
      accepted: start,
      kind: 'merge',
      entry: { fields: { 'str::email': 'new@example.com' } },
    };
    await memory.accept([...tracks.slice(0, 100), identify, ...tracks.slice(100)], start, 86_400_000);
    const { upstream, calls } = platform(sim, rate);
    await drain(sim, slow(sim, memory), upstream, rate);
    expect((await memory.stats()).pending).toBe(0);
    expect(calls.last - start).toBeGreaterThan(4_500);
    // Held back while the leases were full, HOLD_MS at most (then within the next lease, a second
    // of calls here), and sent as it was (one entry), well before the backlog's end.
    expect(calls.mergesAt).toHaveLength(1);
    expect(calls.mergesAt[0]! - start).toBeLessThan(HOLD_MS + 2_000);
    expect(calls.mergesAt[0]!).toBeLessThan(calls.last - 1_000);
    expect(calls.mergeEntries).toBe(1);
  });
});

describe('an item accepted while a backlog goes', () => {
  it('reaches the platform in the next lease’s first call, a lease being half a second of the key’s calls, not a whole second', async () => {
    const rate = 10;
    const sim = simulation(7);
    const memory = createMemoryOutbox();
    const start = sim.now();
    const item = (n: number, browser: string, visitor: string, email: string): OutboxItem => ({
      site: 'pk_p',
      id: `${browser}-${n}`,
      browser,
      visitor,
      accepted: sim.now(),
      kind: 'activity',
      entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': email } },
    });
    // 3,000 tracks of 30 browsers behind one address (3 s of full calls at 10 a second)…
    await memory.accept(
      Array.from({ length: 3_000 }, (_, n) => item(n, `heavy${n % 30}`, '10.9.0.1', `heavy${n % 30}@example.com`)),
      start,
      86_400_000,
    );
    const { upstream, calls } = platform(sim, rate);
    // …and, while they go, a new visitor's item every 130 ms for 2 s.
    const acceptedAt = new Map<string, number>();
    const quiet = Array.from({ length: 15 }, (_, k) =>
      sim.sleep(300 + k * 130).then(async () => {
        acceptedAt.set(`quiet${k}@example.com`, sim.now());
        await memory.accept([item(0, `quiet${k}`, `10.8.0.${k}`, `quiet${k}@example.com`)], sim.now(), 86_400_000);
      }),
    );
    await drain(sim, slow(sim, memory), upstream, rate);
    await Promise.all(quiet);
    expect(calls.last - start).toBeGreaterThan(2_500);
    // Each waits for the next lease, then goes in its first call: a lease is half a second of the
    // key's calls, so at most about a second here (0.97 s; with leases of a whole second of calls, 1.7 s).
    const waits = [...acceptedAt].map(([email, at]) => calls.arrived.get(email)! - at);
    expect(waits).toHaveLength(15);
    expect(Math.max(...waits)).toBeLessThan(1_200);
  });
});
