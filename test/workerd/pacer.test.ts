// The deployment's one budget of platform calls, in a Durable Object every isolate asks: never
// more than the rate in any second, proxy calls first, and the platform's try-in-seconds held by all;
// and the merge turns per person every outbox object's merge calls take with their slots. The
// key's pacer keeps a deliver call waiting inside until its slot (and turn) comes: one request per call.
import { abortAllDurableObjects, env, runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { ENDPOINTS } from '../../src/api/index.js';
import { createUpstream } from '../../src/relay/deliver/caller.js';
import { MAX_PACER_WAIT_MS } from '../../src/relay/deliver/slots.js';
import { fetchTransport } from '../../src/relay/deliver/transport.js';
import { NARROW_MS, QUIET_MS } from '../../src/relay/state/margin.js';
import { SEND_MARGIN } from '../../src/relay/state/pace.js';
import { TURN_WAIT_MS } from '../../src/relay/state/turns.js';
import { createDurablePacer, keyPacer, pacerName, workerConfig } from '../../src/relay/workers/delivery.js';
import { pacerRequests } from './target.js';

const pacer = (rate: number) => createDurablePacer(env['RELAY_STATE'], `pacer:test-${crypto.randomUUID()}`, rate);

/** A virtual time, read by a pacer object and its callers alike. */
interface Virtual {
  t: number;
}

/** Sets the clock pacer `name`'s object grants on, from inside the object (a restart sets it back to the real one). */
const setObjectClock = (name: string, clock: () => number) =>
  runInDurableObject(env['RELAY_STATE'].get(env['RELAY_STATE'].idFromName(name)), (instance) => {
    (instance as { clock: () => number }).clock = clock;
  });

/** A pacer of `rate` whose object grants on virtual time `at` (its callers ask with `at.t`, on the same clock). */
async function virtualPacer(rate: number, at: Virtual) {
  const name = `pacer:test-${crypto.randomUUID()}`;
  await setObjectClock(name, () => at.t);
  return Object.assign(
    createDurablePacer(env['RELAY_STATE'], name, rate, 0, () => at.t),
    { name },
  );
}

/** The spacing of grants at 10 calls/s: the send margin kept between calls from many objects. */
const INTERVAL = 100 * (1 + SEND_MARGIN);

/**
 * The times (virtual) of the grants to callers whose clocks read `offsets` off the pacer's, each
 * asking in turn, again whenever told, while `more` says so.
 */
async function grantsTo(p: ReturnType<typeof createDurablePacer>, at: Virtual, offsets: number[], more: (granted: number[]) => boolean): Promise<number[]> {
  const granted: number[] = [];
  while (more(granted)) {
    const waits: number[] = [];
    for (const offset of offsets) waits.push(await p.take(at.t + offset, 'deliver'));
    for (const wait of waits) if (wait === 0) granted.push(at.t);
    at.t += Math.min(...waits.filter((wait) => wait > 0), INTERVAL);
  }
  return granted;
}

/** The most grants that fall in any one-second window. */
const busiestSecond = (granted: number[]) => Math.max(...granted.map((start) => granted.filter((at) => at >= start && at < start + 1000).length));

describe('the pacer object', () => {
  it('grants at most RELAY_PLATFORM_RATE deliver calls in any second, however many ask at once', async () => {
    const start = 1_000_000;
    const at = { t: start };
    const p = await virtualPacer(10, at);
    const granted: number[] = [];
    // Twenty askers at once (as isolates would), asking again when told, for three seconds.
    while (at.t < start + 3000) {
      const waits = await Promise.all(Array.from({ length: 20 }, () => p.take(at.t, 'deliver')));
      for (const wait of waits) if (wait === 0) granted.push(at.t);
      at.t += Math.min(...waits.filter((wait) => wait > 0));
    }
    // At most the rate in any second, ten grants spanning a second and the send margin…
    expect(busiestSecond(granted)).toBeLessThanOrEqual(10);
    expect(granted[10]! - granted[0]!).toBeGreaterThanOrEqual(1000 * (1 + SEND_MARGIN));
    // …and the budget is used, not wasted.
    expect(granted.length).toBeGreaterThanOrEqual(Math.floor(3000 / (100 * (1 + SEND_MARGIN))));
    // 3,000 calls to the object on a virtual clock (5 s on an idle 2-core machine): nothing is timed,
    // but on a machine loaded many times over they took more than the project's 30 s.
  }, 90_000);

  it('grants on its own clock: callers whose clocks run 800 ms ahead of it and behind it get grants an interval apart, at most the rate in any second', async () => {
    const start = 7_000_000;
    const at = { t: start };
    const p = await virtualPacer(10, at);
    // Two outbox objects on other machines, asking whenever told: one's clock 800 ms behind the pacer's, one's 800 ms ahead.
    const granted = await grantsTo(p, at, [-800, 800], () => at.t < start + 3000);
    // On the pacer's clock (the platform's, but for the way there): never two grants closer than an interval.
    expect(Math.min(...granted.slice(1).map((grant, n) => grant - granted[n]!))).toBeGreaterThanOrEqual(Math.floor(INTERVAL));
    expect(busiestSecond(granted)).toBeLessThanOrEqual(10);
    expect(granted.length).toBeGreaterThanOrEqual(10);
  });

  it('widens the margin by the spread of arrivals it measures: ten grants span a second, the send margin and the spread', async () => {
    const start = 8_000_000;
    const at = { t: start };
    const p = await virtualPacer(10, at);
    // Two callers: one's requests arrive as they state, the other's 300 ms later (its way there, or its clock).
    const granted = await grantsTo(p, at, [0, -300], (grants) => grants.length < 12);
    // Measured from the second grant on (the first was granted before the spread was seen).
    expect(granted[11]! - granted[1]!).toBeGreaterThanOrEqual(1000 * (1 + SEND_MARGIN) + 300);
    // …and no more than that: the budget is used.
    expect(granted[11]! - granted[1]!).toBeLessThan(1000 * (1 + SEND_MARGIN) + 300 + 10 * 5);
  });

  it('tells a refused caller how long to wait, and that wait is enough', async () => {
    const at = { t: 5_000 };
    const p = await virtualPacer(10, at);
    expect(await p.take(at.t, 'deliver')).toBe(0);
    const wait = await p.take(at.t, 'deliver');
    expect(wait).toBe(Math.ceil(INTERVAL));
    at.t += wait;
    expect(await p.take(at.t, 'deliver')).toBe(0);
  });

  it('gives a proxy call the next free slot (it waits for it, then goes, never into debt); deliveries wait behind the slots it took', async () => {
    const t = 2_000_000;
    const p = await virtualPacer(10, { t });
    expect(await p.take(t, 'deliver')).toBe(0);
    // Five proxy calls take the next five slots, one interval apart: each is told how long until its own.
    for (let n = 1; n <= 5; n++) expect(-(await p.take(t, 'proxy'))).toBeCloseTo(n * INTERVAL, -1);
    expect(await p.take(t, 'deliver')).toBeCloseTo(6 * INTERVAL, -1);
  });

  it("holds every caller until the platform's try-in-seconds has passed", async () => {
    const t = 3_000_000;
    const at = { t };
    const p = await virtualPacer(10, at);
    await p.hold(t + 3000, at.t);
    expect(await p.take(at.t, 'deliver')).toBe(3000);
    at.t = t + 1000;
    expect(await p.take(at.t, 'proxy')).toBe(2000);
    await p.hold(t + 1000, at.t); // an earlier end does not shorten the hold
    at.t = t + 2999;
    expect(await p.take(at.t, 'deliver')).toBe(1);
    at.t = t + 3000;
    expect(await p.take(at.t, 'deliver')).toBe(0);
  });

  it("widens the spacing of its grants with the platform's 429s, once a hold, up to 15%, and narrows it back after a quiet stretch", async () => {
    const start = 9_000_000;
    const at = { t: start };
    const p = await virtualPacer(10, at);
    /** Eleven grants to one caller asking whenever told, from `from`, span ten intervals: a second and `margin` (each grant up to 1 ms late, a whole ms). */
    const spans = async (from: number, margin: number) => {
      at.t = from;
      const granted = await grantsTo(p, at, [0], (grants) => grants.length < 11);
      expect(granted[10]! - granted[0]!).toBeGreaterThanOrEqual(Math.round(1000 * (1 + margin)));
      expect(granted[10]! - granted[0]!).toBeLessThanOrEqual(Math.round(1000 * (1 + margin)) + 10);
    };
    await spans(start, SEND_MARGIN);
    // A 429 (held 1 s), and another of the same moment: the margin doubles once, to 6%.
    at.t = start + 5_000;
    await p.hold(at.t + 1_000, at.t);
    await p.hold(at.t + 1_000, at.t + 50);
    await spans(start + 6_000, 0.06);
    // Two more 429s after their holds ended: 12%, then 15% at most.
    for (const t of [start + 10_000, start + 12_000]) {
      at.t = t;
      await p.hold(t + 1_000, t);
    }
    await spans(start + 13_000, 0.15);
    // A quiet stretch without one, then a point each 20 s: 3% again 12 points on.
    await spans(start + 12_000 + QUIET_MS + 12 * NARROW_MS, SEND_MARGIN);
  });

  it('is named by a digest of the platform and key: one budget per key, the key in no name', () => {
    expect(pacerName('https://api.example.com', 'sk_live_secret')).toBe(pacerName('https://api.example.com', 'sk_live_secret'));
    expect(pacerName('https://api.example.com', 'sk_live_secret')).not.toBe(pacerName('https://api.example.com', 'sk_live_other'));
    expect(pacerName('https://api.example.com', 'sk_live_secret')).not.toContain('sk_live');
  });
});

describe("deliver calls waiting in the key's pacer object", () => {
  const named = () => `pacer:test-${crypto.randomUUID()}`;

  it('answers each of many calls asked at once when its slot comes: one request per call, the slots a rate apart', async () => {
    // the deployment's own pacer, as the outbox objects get it (RELAY_PLATFORM_RATE unset: 10 calls a second)
    const config = workerConfig(env as never);
    const name = pacerName(config.baseUrl, config.apiKey);
    const p = keyPacer(env as never, config);
    const before = await pacerRequests(name);
    const asked = Date.now();
    // Six calls at once (as outbox objects would): each used to be told the same wait and ask again.
    // A call waits inside for 2 s at most (MAX_PACER_WAIT_MS), and the object widens the spacing of
    // 100 ms by the key's margin (15% at most) and the spread of its requests' arrivals (1 s a
    // second at most), which a loaded machine widens, and wakes late: twelve calls' slots, 1.1 s
    // apart alone, passed the 2 s in a run of the workerd and e2e projects at load 16-18 (some
    // answered a wait). Six span 1.1 s at the widest spacing.
    const answers = await Promise.all(Array.from({ length: 6 }, async () => ({ wait: await p.take(Date.now(), 'deliver'), at: Date.now() })));
    expect(answers.map((answer) => answer.wait)).toEqual(Array.from({ length: 6 }, () => 0));
    expect((await pacerRequests(name)) - before).toBe(6);
    // granted 100 ms apart: the sixth no sooner than 0.5 s after they asked
    expect(Math.max(...answers.map((answer) => answer.at)) - asked).toBeGreaterThanOrEqual(500);
  });

  it('a proxy call asked meanwhile takes the next free slot, ahead of the waiting call', async () => {
    // On a virtual clock the waiting call's slot comes only as the test moves the clock, so the proxy
    // call surely asks while it waits (on the real clock its slot came 500 ms on, and in a loaded
    // run the proxy call asked after it had been granted); it may wait inside 20 s meanwhile.
    const t = 7_000_000;
    const at = { t };
    const name = named();
    await setObjectClock(name, () => at.t);
    const p = createDurablePacer(env['RELAY_STATE'], name, 2, 20_000, () => at.t);
    expect(await p.take(t, 'deliver')).toBe(0);
    const before = await pacerRequests(name);
    /** the virtual time by which the waiting call was granted */
    let grantedBy: number | undefined;
    const waiting = p.take(t, 'deliver').then((wait) => {
      grantedBy = at.t;
      return wait;
    });
    // The proxy call asks once the deliver call waits inside the object (sent together, either may arrive first).
    await expect.poll(() => pacerRequests(name), { interval: 10, timeout: 5_000 }).toBe(before + 1);
    // The next slot (500 ms after the first call, and the margin) is the proxy call's: it is told how long until then.
    const proxyWait = await p.take(t, 'proxy');
    expect(proxyWait).toBeLessThan(0);
    const proxySlot = t - proxyWait;
    expect(proxySlot - t).toBeGreaterThanOrEqual(500);
    // The clock moves on as time does, until the waiting call is granted.
    while (grantedBy === undefined && at.t < t + 10_000) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      at.t += 20;
    }
    expect(await waiting).toBe(0);
    // its slot moved back behind the proxy call's: two slots of 500 ms after the first call
    expect(grantedBy! - t).toBeGreaterThanOrEqual(1000);
    expect(grantedBy).toBeGreaterThan(proxySlot);
  });

  it('a hold that comes while a call waits stops it: answered the rest of the hold, not granted', async () => {
    const p = createDurablePacer(env['RELAY_STATE'], named(), 1, MAX_PACER_WAIT_MS);
    expect(await p.take(Date.now(), 'deliver')).toBe(0);
    const waiting = p.take(Date.now(), 'deliver');
    const holdEnd = Date.now() + 3000;
    await p.hold(holdEnd, Date.now());
    const wait = await waiting;
    expect(wait).toBeGreaterThan(0);
    expect(Date.now() + wait).toBeGreaterThanOrEqual(holdEnd);
  });

  it("a merge call waits inside for its person's turn too: granted once the holder gives it back, in one request", async () => {
    const name = named();
    const p = createDurablePacer(env['RELAY_STATE'], name, 1000, MAX_PACER_WAIT_MS);
    const turn = (id: string) => ({ turn: { id, people: ['ann'], ms: 15_000 }, giveBack: [] });
    expect(await p.take(Date.now(), 'deliver', turn('holder'))).toBe(0);
    const before = await pacerRequests(name);
    const waiting = p.take(Date.now(), 'deliver', turn('next'));
    // once the object has looked (the turn is held), the holder's call is answered and its turn given back
    await expect.poll(() => pacerRequests(name), { interval: 10, timeout: 5_000 }).toBe(before + 1);
    await p.giveBack!(['holder'], Date.now());
    expect(await waiting).toBe(0);
    expect((await pacerRequests(name)) - before).toBe(2);
  });
});

describe('merge turns in the pacer object', () => {
  const turn = (id: string, people: string[]) => ({ turn: { id, people, ms: 15_000 }, giveBack: [] });
  /** Asks at virtual time `when` (the object's clock and the caller's). */
  const takeAt = (p: ReturnType<typeof createDurablePacer>, at: Virtual, when: number, turns?: Parameters<typeof p.take>[2]) => {
    at.t = when;
    return p.take(when, 'deliver', turns);
  };
  const giveBackAt = (p: ReturnType<typeof createDurablePacer>, at: Virtual, when: number, ids: string[]) => {
    at.t = when;
    return p.giveBack!(ids, when);
  };

  it('grants a merge call its slot only while no other call naming one of its people holds the turn', async () => {
    const t = 4_000_000;
    const at = { t };
    const p = await virtualPacer(1000, at);
    expect(await takeAt(p, at, t, turn('a', ['ann']))).toBe(0);
    expect(await takeAt(p, at, t + 10, turn('b', ['bob']))).toBe(0);
    // Another object's merge of ann waits, and takes no slot of the budget while it waits.
    expect(await takeAt(p, at, t + 20, turn('c', ['ann', 'cid']))).toBe(TURN_WAIT_MS);
    expect(await takeAt(p, at, t + 20)).toBe(0);
    // Given back on the holder's next request (one with no turn of its own), or on its own.
    expect(await takeAt(p, at, t + 300, { giveBack: ['a'] })).toBe(0);
    expect(await takeAt(p, at, t + 310, turn('c', ['ann', 'cid']))).toBe(0);
    await giveBackAt(p, at, t + 600, ['c']);
    expect(await takeAt(p, at, t + 610, turn('d', ['ann']))).toBe(0);
  });

  it('keeps a held turn through a restart of the object (a deploy, an eviction): no overlap, and a turn given back is gone', async () => {
    const t = 6_000_000;
    const at = { t };
    const p = await virtualPacer(1000, at);
    expect(await takeAt(p, at, t, turn('before', ['ann']))).toBe(0);
    expect(await takeAt(p, at, t + 10, turn('gone', ['bob']))).toBe(0);
    await giveBackAt(p, at, t + 20, ['gone']);
    await abortAllDurableObjects();
    await setObjectClock(p.name, () => at.t);
    // The restarted object still knows ann's merge is in flight, and that bob's was answered.
    expect(await takeAt(p, at, t + 30, turn('after', ['ann']))).toBe(TURN_WAIT_MS);
    expect(await takeAt(p, at, t + 40, turn('bob again', ['bob']))).toBe(0);
    expect(await takeAt(p, at, t + 50, { giveBack: ['before'] })).toBe(0);
    expect(await takeAt(p, at, t + 60, turn('after', ['ann']))).toBe(0);
  });

  it('ends a turn whose holder never gives it back once its time has run out', async () => {
    const t = 5_000_000;
    const at = { t };
    const p = await virtualPacer(1000, at);
    expect(await takeAt(p, at, t, turn('dead', ['ann']))).toBe(0);
    expect(await takeAt(p, at, t + 14_999, turn('b', ['ann']))).toBe(TURN_WAIT_MS);
    expect(await takeAt(p, at, t + 15_000, turn('b', ['ann']))).toBe(0);
  });
});

describe('proxy calls spend the same budget', () => {
  it("a call made while the key is held is answered 429 by the relay (try-in-seconds), and the platform's 429 holds everyone", async () => {
    const p = pacer(10);
    let calls = 0;
    let status = 429;
    const fetchImpl = (async () => {
      calls++;
      return Response.json({ error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 4 } }, { status });
    }) as unknown as typeof fetch;
    const upstream = () =>
      createUpstream({
        apiKey: 'k',
        baseUrl: 'http://upstream.test',
        transport: fetchTransport(fetchImpl),
        timeoutMs: 5000,
        backoff: { until: 0 },
        now: Date.now,
        pacer: p,
      });
    // The platform says wait 4 s: the pacer object holds …
    expect((await upstream().call(ENDPOINTS['tags/get'], '{}')).status).toBe(429);
    expect(calls).toBe(1);
    status = 200;
    // … so another isolate's upstream (its own backoff, the same pacer) does not call at all.
    const held = await upstream().call(ENDPOINTS['tags/get'], '{}');
    expect(held.status).toBe(429);
    expect(Number(held.retryAfter)).toBeGreaterThanOrEqual(3);
    expect(calls).toBe(1);
  });
});
