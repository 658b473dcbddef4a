// Accept, then deliver, against the real emulator over HTTP: the window (a controllable clock),
// the ambiguous-call policy (the emulator applies a call, then fails to answer), identify before
// track, pacing under the platform's rate limit, and counted at the emulator: never twice. The
// window and the ambiguous calls run on each outbox: memory, an SQLite file, a real redis-server.
import { describe, expect, it } from 'vitest';
import { createRelayHandlers } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import { createMemoryOutbox, createMemoryPacer } from '../../src/relay/state/memory-outbox.js';
import type { DeliveryEvent } from '../../src/relay/core/observe.js';
import { systemClock } from '../../src/relay/core/clock.js';
import { createUpstream } from '../../src/relay/deliver/caller.js';
import { createDeliverer } from '../../src/relay/deliver/deliverer.js';
import { fetchTransport } from '../../src/relay/deliver/transport.js';
import { startEmulator } from '../../src/emulator/index.js';
import { backing, closing, DAY, emulator, eventsOf, identify, KEY, ORIGIN, onEachBackend, person, relay, track } from './support/delivery-kit.js';

describe('the window', () =>
  onEachBackend(() => {
    it('answers duplicate for a resend at any age within the window, refuses one beyond it (expired), and delivers the item once', async () => {
      let now = Date.now();
      const clock = { now: () => now, sleep: async () => {} };
      const { post, handlers } = relay({}, { clock });
      const email = `window-${crypto.randomUUID()}@example.com`;
      const item = track(email, new Date(now).toISOString());
      const first = await post([item]);
      expect(first.results).toEqual([{ id: item.id, status: 'accepted' }]);
      expect(first.window).toBe(7 * 24 * 3600);
      const sentAt = now;
      for (const age of [1_000, 3600_000, DAY, 3 * DAY, 6 * DAY, 7 * DAY - 60_000]) {
        now = sentAt + age;
        // The browser's clock agrees with the relay's: sent_at is now.
        const again = await post([item], { sent_at: new Date(now).toISOString() });
        expect([age, again.results[0]!.status]).toEqual([age, 'duplicate']);
      }
      for (const age of [7 * DAY + 60_000, 8 * DAY, 30 * DAY]) {
        now = sentAt + age;
        const late = await post([item], { sent_at: new Date(now).toISOString() });
        expect([age, late.results[0]]).toEqual([age, expect.objectContaining({ id: item.id, status: 'rejected', reason: 'expired' })]);
      }
      await handlers.drained();
      expect(eventsOf(email)).toHaveLength(1);
    });

    it('judges age on the relay clock: a browser clock hours behind is corrected, a future ts is not trusted', async () => {
      const { post, handlers } = relay({ RELAY_DEDUPE_WINDOW_HOURS: '24' });
      const now = Date.now();
      // Made 2 h ago on a browser whose clock runs 30 h behind: its ts looks 32 h old, but it is 2 h old.
      const email = `skew-${crypto.randomUUID()}@example.com`;
      const behind = track(email, new Date(now - 32 * 3600_000).toISOString());
      const answer = await post([behind], { sent_at: new Date(now - 30 * 3600_000).toISOString() });
      expect(answer.window).toBe(24 * 3600);
      expect(answer.results[0]!.status).toBe('accepted');
      // Really older than the window: refused.
      const old = track(email, new Date(now - 25 * 3600_000).toISOString());
      expect((await post([old], { sent_at: new Date(now).toISOString() })).results[0]).toMatchObject({ status: 'rejected', reason: 'expired' });
      await handlers.drained();
      expect(eventsOf(email)).toHaveLength(1);
    });
  }));

describe('ambiguous calls', () =>
  onEachBackend(() => {
    const faults = [
      ['applied, then 504', { status: 504, applied: true }],
      ['applied, then the connection dropped', { drop: 'close', applied: true }],
      ['applied, then no answer (timeout)', { drop: 'hang', applied: true }],
    ] as const;
    it.each(faults)('%s: activities are held as dead letters (ambiguous), counted, never sent twice', async (_name, fault) => {
      const { post, handlers, events } = relay({ RELAY_BUDGET_MS: '1000' });
      const email = `amb-${crypto.randomUUID()}@example.com`;
      emulator.emulator.setFaults({ 'activities/create': { ...fault } });
      const item = track(email);
      expect((await post([item])).results[0]!.status).toBe('accepted');
      await handlers.drained();
      emulator.emulator.setFaults({});
      // The platform applied it once; the relay holds it instead of guessing.
      expect(eventsOf(email)).toHaveLength(1);
      const letters = await handlers.outbox!.deadLetters();
      expect(letters.filter((letter) => letter.id === item.id).map((letter) => letter.reason)).toEqual(['ambiguous']);
      expect(events.flatMap((event) => event.ambiguous.map((entry) => entry.id))).toContain(item.id);
      // Time passes, the relay keeps running: nothing is sent again.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await handlers.drained();
      expect(eventsOf(email)).toHaveLength(1);
    });

    it('RELAY_AMBIGUOUS=resend opts into at least once: the activity goes again', async () => {
      const { post, handlers } = relay({ RELAY_AMBIGUOUS: 'resend' });
      const email = `resend-${crypto.randomUUID()}@example.com`;
      emulator.emulator.setFaults({ 'activities/create': { status: 504, applied: true, rate: 1 } });
      expect((await post([track(email)])).results[0]!.status).toBe('accepted');
      await expect.poll(() => eventsOf(email).length, { timeout: 5_000 }).toBeGreaterThanOrEqual(1);
      emulator.emulator.setFaults({});
      await handlers.drained();
      expect(eventsOf(email)).toHaveLength(2);
      expect(await handlers.outbox!.deadLetters()).toEqual([]);
    });

    it('sends a merge again after an ambiguous answer: merging the same fields twice leaves the person as once', async () => {
      const { post, handlers } = relay();
      const email = `merge-${crypto.randomUUID()}@example.com`;
      emulator.emulator.setFaults({ 'person/merge': { status: 504, applied: true } });
      expect((await post([identify(email, 'Mia')])).results[0]!.status).toBe('accepted');
      await expect.poll(() => emulator.emulator.calls()['person/merge']?.statuses?.['504'] ?? 0, { timeout: 5_000 }).toBeGreaterThan(0);
      emulator.emulator.setFaults({});
      await handlers.drained();
      expect(person(email)).toHaveLength(1);
      expect(person(email)[0]!.fields['str::first']).toBe('Mia');
      expect(await handlers.outbox!.deadLetters()).toEqual([]);
    });

    it('an entry leased again after its deliverer died mid-call (attempts > 0) is held, not sent', async () => {
      const outbox = backing!.outbox;
      const { post, handlers } = relay({}, { deliver: false });
      const item = track(`orphan-${crypto.randomUUID()}@example.com`);
      expect((await post([item])).results[0]!.status).toBe('accepted');
      // A deliverer that leased it, started a call with it and died before it heard the answer.
      const [leased] = await outbox.lease('dead-deliverer', 10, Date.now() - 60_000, 1_000);
      expect(await outbox.sending('dead-deliverer', [leased!.seq], Date.now() - 60_000)).toEqual([leased!.seq]);
      const { handlers: next } = relay();
      await next.drained();
      expect((await outbox.deadLetters()).map((letter) => [letter.id, letter.reason])).toEqual([[item.id, 'ambiguous']]);
      expect(eventsOf(item.person['str::email'])).toHaveLength(0);
      await handlers.close();
    });
  }));

describe('a deliverer that dies holding a lease of many entries', () =>
  onEachBackend(() => {
    it('holds at most the entries of the call in flight; the never-sent rest is delivered, once', async () => {
      const { outbox, pacer } = backing!;
      const run = crypto.randomUUID().slice(0, 8);
      const now = Date.now();
      // 250 entries: three calls (100, 100, 50) of one lease. One person each, under the platform's daily cap.
      const items = Array.from({ length: 250 }, (_, n) => ({
        site: 'pk_d',
        id: `${run}-${n}`,
        kind: 'activity' as const,
        entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': `die-${run}-${n}@example.com` } },
        browser: `b-${n}`,
        visitor: 'v',
        accepted: now,
      }));
      let dead = false;
      // The leader dies (SIGKILL) the moment its first platform call leaves: that call reaches the
      // platform and is applied, but nothing the leader asks of the outbox afterwards ever happens.
      const leaderOutbox = new Proxy(outbox, {
        get(target, property, receiver) {
          const value = Reflect.get(target, property, receiver);
          return typeof value === 'function' ? (...args: unknown[]) => (dead ? new Promise(() => {}) : value.apply(target, args)) : value;
        },
      });
      const upstream = (onCall: () => void) =>
        createUpstream({
          baseUrl: emulator.url,
          apiKey: KEY,
          transport: fetchTransport((input, init) => {
            onCall();
            return fetch(input, init);
          }),
          timeoutMs: 10_000,
          backoff: { until: 0 },
          now: Date.now,
        });
      const sites = parseConfig({
        CDP_API_KEY: KEY,
        CDP_BASE_URL: emulator.url,
        RELAY_SITES: JSON.stringify([{ key: 'pk_d', origins: [ORIGIN], verify: 'open' }]),
        RELAY_LOG: 'off',
      }).sites;
      const common = { pacer, clock: systemClock, sites, waitMs: 0, ambiguous: 'hold' as const, leaseMs: 3_500, leadTtlMs: 1_000 };
      const leader = createDeliverer({
        ...common,
        outbox: leaderOutbox,
        owner: `leader-${run}`,
        upstream: upstream(() => (dead = true)),
      });
      leader.start();
      await expect.poll(async () => outbox.lead('probe', Date.now(), 1)).toBe(false);
      expect((await outbox.accept(items, Date.now(), DAY)).accepted).toHaveLength(250);
      await expect.poll(() => dead, { timeout: 5_000 }).toBe(true);
      const standby = createDeliverer({ ...common, outbox, owner: `standby-${run}`, upstream: upstream(() => {}) });
      standby.start();
      closing.push(() => standby.stop());
      // The standby leads once the lock runs out, and leases the entries once the dead leader's lease has.
      await standby.drained({ timeoutMs: 15_000 });
      const arrived = items.map((entry) => eventsOf(`die-${run}-${entry.id.slice(run.length + 1)}@example.com`).length);
      // Never twice; every entry arrived (the first call's were applied by the leader's call).
      expect(arrived.filter((count) => count !== 1)).toEqual([]);
      const held = (await outbox.deadLetters()).filter((letter) => letter.id.startsWith(run));
      expect(held.every((letter) => letter.reason === 'ambiguous')).toBe(true);
      // At most the 100 entries of the one call in flight are held; the 150 never sent are not.
      expect(held.length).toBeLessThanOrEqual(100);
      const firstHundred = new Set(items.slice(0, 100).map((entry) => entry.id));
      expect(held.filter((letter) => !firstHundred.has(letter.id))).toEqual([]);
    }, 30_000);
  }));

describe('order and pacing', () => {
  it("sends an identify's merge before the tracks of the same browser, and holds the tracks while the merge cannot go", async () => {
    const { post, handlers } = relay({ RELAY_DELIVERY_WAIT_MS: '0' });
    const email = `order-${crypto.randomUUID()}@example.com`;
    emulator.emulator.setFaults({ 'person/merge': { status: 503 } });
    const before = emulator.emulator.calls()['activities/create']?.calls ?? 0;
    await post([track(email), identify(email, 'Oli'), track(email)], { queue: 'browser-1' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The merge was refused (not applied): the tracks behind it wait, in the outbox.
    expect(emulator.emulator.calls()['activities/create']?.calls ?? 0).toBe(before);
    emulator.emulator.setFaults({});
    await handlers.drained({ timeoutMs: 15_000 });
    expect(person(email)[0]!.fields['str::first']).toBe('Oli');
    expect(eventsOf(email)).toHaveLength(2);
  }, 20_000);

  /** 3,000 tracks (30 full calls' worth) through a relay paced at 10 calls/s, to a platform limited to 10 calls/s taking `latencyMs` per call. */
  async function saturate(latencyMs: number) {
    const limited = await startEmulator({ port: 0, key: KEY, rateLimit: 10, latencyMs });
    // Every call to the key takes its slot, this test's own setup call too (as a proxy call would).
    const pacer = createMemoryPacer(10);
    try {
      expect(await pacer.take(Date.now(), 'proxy')).toBe(0);
      await fetch(`${limited.url}/v1/definitions/activity/create`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': KEY },
        body: JSON.stringify({ name: 'viewed', attributes: [] }),
      });
      const config = parseConfig({
        CDP_API_KEY: KEY,
        CDP_BASE_URL: limited.url,
        RELAY_SITES: JSON.stringify([{ key: 'pk_d', origins: [ORIGIN], verify: 'open', visitor_rate_limit: { per_second: 10_000, burst: 10_000 } }]),
        RELAY_LOG: 'off',
        RELAY_PLATFORM_RATE: '10',
      });
      // Accepted straight into the outbox: 3,000 items through /collect in one burst would hold this
      // process's event loop (ingest and delivery share it) and bunch the first calls' departures.
      const outbox = createMemoryOutbox();
      const now = Date.now();
      const items = Array.from({ length: 3000 }, (_, n) => ({
        site: 'pk_d',
        id: `pace-${latencyMs}-${n}-${crypto.randomUUID()}`,
        kind: 'activity' as const,
        entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': `pace-${latencyMs}-${n}@example.com` } },
        browser: `b-${n}`,
        visitor: 'v',
        accepted: now,
      }));
      expect((await outbox.accept(items, now, DAY)).accepted).toHaveLength(3000);
      const calls: { at: number; entries: number; status: number }[] = [];
      const started = Date.now();
      const handlers = createRelayHandlers(config, {
        pacer,
        outbox,
        observer: { delivery: (event) => event.called && calls.push({ at: event.at, entries: event.delivered + event.released, status: event.status }) },
      });
      closing.push(() => handlers.close());
      await handlers.drained({ timeoutMs: 20_000 });
      return { seconds: (Date.now() - started) / 1000, counts: limited.emulator.calls()['activities/create']!, calls };
    } finally {
      await limited.close();
    }
  }

  it('paces calls to RELAY_PLATFORM_RATE under the platform limit: no 429, full calls at saturation', async () => {
    const { seconds, counts, calls } = await saturate(0);
    // The platform counts calls in one-second windows opened by the first call it sees. Calls
    // leave spaced by the time they leave (plus the margin), so however late the first one is,
    // the eleventh never lands in its window: no call is answered 429.
    expect(counts.statuses['429'] ?? 0).toBe(0);
    expect(counts.entries).toBe(3000);
    // 3,000 entries in 30 full calls: at 10 calls/s that takes about 3 s, never less.
    const taken = calls.filter((call) => call.status === 200);
    expect(taken.length).toBe(30);
    expect(taken.every((call) => call.entries === 100)).toBe(true);
    expect(seconds).toBeGreaterThanOrEqual(2.8);
    // Spaced 1/rate apart (answers may bunch a little; the platform's own count above saw no 429).
    expect(calls.at(-1)!.at - calls[0]!.at).toBeGreaterThanOrEqual((calls.length - 1) * 100 - 150);
  }, 30_000);

  it('overlaps calls: a platform taking 300 ms per call still gets about RELAY_PLATFORM_RATE calls a second', async () => {
    const { seconds, counts, calls } = await saturate(300);
    // One call at a time would take 30 × 300 ms = 9 s at least; overlapped, the pacer's 10 calls/s
    // is the bound (about 3 s, plus the last answer's 300 ms and a lease or two).
    expect(counts.entries).toBe(3000);
    // The emulator runs in this process: under load its answers (and its count of each call) come
    // 300–800 ms after the call left, so one call in 30 may still be counted in the wrong window.
    expect(counts.statuses['429'] ?? 0).toBeLessThanOrEqual(1);
    expect(calls.filter((call) => call.status === 200)).toHaveLength(30);
    expect(seconds).toBeGreaterThanOrEqual(2.8);
    expect(seconds).toBeLessThan(6);
  }, 30_000);
});

/** Puts `item` straight into `outbox`, as ingest would have. */
const acceptTrack = (outbox: ReturnType<typeof createMemoryOutbox>, item: ReturnType<typeof track>) =>
  outbox.accept(
    [
      {
        site: 'pk_d',
        id: item.id,
        kind: 'activity',
        entry: { activity_id: item.activity_id, fields: item.person },
        browser: 'b',
        visitor: 'v',
        accepted: Date.now(),
      },
    ],
    Date.now(),
    DAY,
  );

describe('leases and the lead', () => {
  const config = () =>
    parseConfig({
      CDP_API_KEY: KEY,
      CDP_BASE_URL: emulator.url,
      RELAY_SITES: JSON.stringify([{ key: 'pk_d', origins: [ORIGIN], verify: 'open' }]),
      RELAY_LOG: 'off',
    });
  const upstreamOf = (timeoutMs = 10_000) =>
    createUpstream({ baseUrl: emulator.url, apiKey: KEY, transport: fetchTransport(fetch), timeoutMs, backoff: { until: 0 }, now: Date.now });

  it('no call outlives its lease: a platform that never answers is cut off before the lease ends, and the entry is held', async () => {
    const outbox = createMemoryOutbox();
    const item = track(`lease-${crypto.randomUUID()}@example.com`);
    await acceptTrack(outbox, item);
    emulator.emulator.setFaults({ 'activities/create': { drop: 'hang', applied: true } });
    const events: DeliveryEvent[] = [];
    const deliverer = createDeliverer({
      outbox,
      pacer: createMemoryPacer(10),
      upstream: upstreamOf(),
      clock: systemClock,
      sites: config().sites,
      waitMs: 0,
      ambiguous: 'hold',
      leaseMs: 3_500,
      onDelivery: (event) => events.push(event),
    });
    const started = Date.now();
    deliverer.start();
    await deliverer.drained({ timeoutMs: 10_000 });
    await deliverer.stop();
    // The lease had 3.5 s; 2 s are kept to settle: the call was given 1.5 s, not the 10 s call timeout.
    expect(Date.now() - started).toBeLessThan(3_500);
    expect(events.flatMap((event) => event.ambiguous.map((entry) => entry.id))).toEqual([item.id]);
    expect((await outbox.deadLetters()).map((letter) => letter.reason)).toEqual(['ambiguous']);
  });

  it("only the lease's owner settles: a deliverer whose lease ran out and was taken is skipped", async () => {
    const outbox = createMemoryOutbox();
    const now = Date.now();
    await outbox.accept([{ site: 'pk_d', id: 'x1', kind: 'activity', entry: {}, browser: 'b', visitor: 'v', accepted: now }], now, DAY);
    const [stale] = await outbox.lease('old', 10, now, 1_000);
    const [fresh] = await outbox.lease('new', 10, now + 2_000, 1_000);
    expect(fresh!.seq).toBe(stale!.seq);
    expect(await outbox.settle('old', { delivered: [stale!.seq], released: [], dead: [] }, now + 2_500)).toEqual({ skipped: 1 });
    expect((await outbox.stats()).pending).toBe(1);
    expect(await outbox.settle('new', { delivered: [fresh!.seq], released: [], dead: [] }, now + 2_600)).toEqual({ skipped: 0 });
    expect((await outbox.stats()).pending).toBe(0);
  });

  it('a standby deliverer takes over once the leader dies, and delivers what the leader left', async () => {
    const outbox = createMemoryOutbox();
    let dead = false;
    // The leader's view of the outbox: once it "dies", nothing it asks ever comes back.
    const leaderOutbox = new Proxy(outbox, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? (...args: unknown[]) => (dead ? new Promise(() => {}) : value.apply(target, args)) : value;
      },
    });
    const common = {
      pacer: createMemoryPacer(10),
      upstream: upstreamOf(),
      clock: systemClock,
      sites: config().sites,
      waitMs: 0,
      ambiguous: 'hold' as const,
      leadTtlMs: 1_000,
    };
    const leader = createDeliverer({ ...common, outbox: leaderOutbox, owner: 'leader' });
    leader.start();
    await expect.poll(async () => outbox.lead('probe', Date.now(), 1)).toBe(false);
    const standby = createDeliverer({ ...common, outbox, owner: 'standby' });
    standby.start();
    dead = true;
    const email = `takeover-${crypto.randomUUID()}@example.com`;
    const item = track(email);
    await acceptTrack(outbox, item);
    await standby.drained({ timeoutMs: 10_000 });
    await standby.stop();
    expect(eventsOf(email)).toHaveLength(1);
  });
});
