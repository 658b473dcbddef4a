// Order and pacing against the real emulator over HTTP: identify before track, and calls paced
// under the platform's rate limit (full calls at saturation; none over the platform's window by
// when the calls left the relay, the emulator in this process reading a call late under load).
import { describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/emulator/rate-limit.js';
import { createRelayHandlers } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import { createMemoryOutbox, createMemoryPacer } from '../../src/relay/state/memory-outbox.js';
import { CATCH_UP_MS } from '../../src/relay/state/pace.js';
import { ENDPOINTS } from '../../src/api/index.js';
import { createUpstream } from '../../src/relay/deliver/caller.js';
import { fetchTransport } from '../../src/relay/deliver/transport.js';
import { startEmulator } from '../../src/emulator/index.js';
import {
  backlog,
  closing,
  DAY,
  defineActivity,
  emulator,
  eventsOf,
  identify,
  KEY,
  ORIGIN,
  person,
  relay,
  track,
  useDeliveryKit,
} from './support/delivery-kit.js';

useDeliveryKit();

/** A platform call as it left the relay (its transport's `fetch` called) and as it was answered. */
interface Left {
  path: string;
  at: number;
  answered?: number;
  status?: number;
}

/** `fetch` that notes each call in `left` as it leaves and when it is answered. */
function noting(left: Left[]): typeof fetch {
  return async (input, init) => {
    const call: Left = { path: new URL(input instanceof Request ? input.url : String(input)).pathname, at: Date.now() };
    left.push(call);
    const response = await fetch(input, init);
    call.answered = Date.now();
    call.status = response.status;
    return response;
  };
}

/**
 * The calls the platform's window (the emulator's own rule: `rate` calls in a second opened by the
 * first call after the last one ended) would answer 429 had each arrived when it left the relay.
 * The emulator of these tests runs in their process: under load it reads a call hundreds of ms
 * after the relay sent it (459 ms seen at load 14, a person/get behind the deliverer's first
 * lease), so two calls that left a window apart can be counted in one. What the relay decides is
 * when its calls leave, and that is what this counts.
 */
function overByWhenTheyLeft(left: readonly Left[], rate: number): string[] {
  let clock = 0;
  const limiter = createRateLimiter(rate, () => clock);
  const start = left[0]?.at ?? 0;
  return [...left]
    .sort((a, b) => a.at - b.at)
    .flatMap((call) => {
      clock = call.at;
      return limiter.take() === undefined ? [] : [`${call.path} at ${call.at - start} ms`];
    });
}

describe('order and pacing', () => {
  it("sends an identify's merge before the tracks of the same browser, and holds the tracks while the merge cannot go", async () => {
    // A merge not applied goes again after 300 ms (5 s by default).
    const { post, handlers } = relay({ RELAY_DELIVERY_WAIT_MS: '0', RELAY_DELIVERY_RETRY_MS: '300' });
    const email = `order-${crypto.randomUUID()}@example.com`;
    emulator.emulator.setFaults({ 'person/merge': { status: 503 } });
    const before = emulator.emulator.calls()['activities/create']?.calls ?? 0;
    const refused = emulator.emulator.calls()['person/merge']?.statuses?.['503'] ?? 0;
    await post([track(email), identify(email, 'Oli'), track(email)], { queue: 'browser-1' });
    // The merge was refused (not applied), then refused again after its wait: the tracks behind it wait, in the outbox.
    await expect.poll(() => emulator.emulator.calls()['person/merge']?.statuses?.['503'] ?? 0, { timeout: 10_000 }).toBeGreaterThanOrEqual(refused + 2);
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
      await defineActivity(limited.url);
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
      const items = backlog('pk_d', `pace-${latencyMs}`, 3000, now);
      expect((await outbox.accept(items, now, DAY)).accepted).toHaveLength(3000);
      const calls: { at: number; entries: number; status: number }[] = [];
      const left: Left[] = [];
      const started = Date.now();
      const handlers = createRelayHandlers(config, {
        pacer,
        outbox,
        fetch: noting(left),
        observer: { delivery: (event) => event.called && calls.push({ at: event.at, entries: event.delivered + event.released, status: event.status }) },
      });
      closing.push(() => handlers.close());
      await handlers.drained({ timeoutMs: 20_000 });
      return { seconds: (Date.now() - started) / 1000, counts: limited.emulator.calls()['activities/create']!, calls, left };
    } finally {
      await limited.close();
    }
  }

  it('paces calls to RELAY_PLATFORM_RATE under the platform limit: none over its window as they leave, full calls at saturation', async () => {
    const { seconds, counts, calls, left } = await saturate(0);
    // The platform counts calls in one-second windows opened by the first call it sees. Calls
    // leave spaced by the time they leave (plus the margin), so the eleventh never leaves within
    // the window the first opened: by when they left, no call is over the platform's rate. (The
    // platform here runs in this process and may read a call late under load: one 429 counted at
    // load 4-5 in CI. The relay takes such a 429 back and sends its entries again, checked below.)
    expect(overByWhenTheyLeft(left, 10)).toEqual([]);
    expect(counts.entries).toBe(3000);
    // 3,000 entries in 30 full calls: at 10 calls/s that takes about 3 s, never less.
    const taken = calls.filter((call) => call.status === 200);
    expect(taken.length).toBe(30);
    expect(taken.every((call) => call.entries === 100)).toBe(true);
    expect(seconds).toBeGreaterThanOrEqual(2.8);
    // Spaced 1/rate apart (answers may bunch a little).
    expect(calls.at(-1)!.at - calls[0]!.at).toBeGreaterThanOrEqual((calls.length - 1) * 100 - 150);
  }, 30_000);

  it('overlaps calls: a platform taking 300 ms per call still gets about RELAY_PLATFORM_RATE calls a second', async () => {
    const { seconds, counts, calls, left } = await saturate(300);
    expect(counts.entries).toBe(3000);
    expect(calls.filter((call) => call.status === 200)).toHaveLength(30);
    // Overlapped, calls leave at the pacer's 10 a second: the usual gap between one call leaving and
    // the next is its 100 ms. One at a time, a call would leave only once the one before was
    // answered, 300 ms or more later (30 × 300 ms = 9 s at least). A loaded machine stretches the
    // run's total (6.96 s seen at load 17), not the usual gap: the pacer makes up what a late timer lost.
    const gaps = left.slice(1).map((call, n) => call.at - left[n]!.at);
    const usualGap = gaps.sort((a, b) => a - b)[Math.floor(gaps.length / 2)]!;
    expect(usualGap).toBeLessThan(200);
    expect(seconds).toBeGreaterThanOrEqual(2.8);
    // At the platform's rate by when the calls left (the platform itself, in this process, may
    // count one late: see overByWhenTheyLeft).
    expect(overByWhenTheyLeft(left, 10)).toEqual([]);
  }, 30_000);

  it('shares the window with proxy calls: a backlog with a proxy call every half second sends nothing over the platform window', async () => {
    const limited = await startEmulator({ port: 0, key: KEY, rateLimit: 10, latencyMs: 50 });
    // The relay's own pacer (its deliverer may catch up), shared by its deliveries and its proxy calls.
    // It paces at 9 calls a second, under the platform's 10: what this case guards is the sharing
    // (deliveries at 9 and unshared proxy calls at 2 a second overrun the 10, checked), not the 3%
    // margin, whose timing a loaded machine can beat (the case above holds the pace at the limit).
    const pacer = createMemoryPacer(9, CATCH_UP_MS);
    const left: Left[] = [];
    const proxy = createUpstream({
      baseUrl: limited.url,
      apiKey: KEY,
      transport: fetchTransport(noting(left)),
      timeoutMs: 10_000,
      backoff: { until: 0 },
      now: Date.now,
      pacer,
    });
    try {
      expect((await proxy.call(ENDPOINTS['definitions/activity/create'], JSON.stringify({ name: 'viewed', attributes: [] }))).status).toBe(200);
      const config = parseConfig({
        CDP_API_KEY: KEY,
        CDP_BASE_URL: limited.url,
        RELAY_SITES: JSON.stringify([{ key: 'pk_d', origins: [ORIGIN], verify: 'open' }]),
        RELAY_LOG: 'off',
        RELAY_PLATFORM_RATE: '9',
      });
      // 4,500 tracks: 45 full calls, about 5.5 s at 9 calls a second less the proxy's.
      const outbox = createMemoryOutbox();
      const now = Date.now();
      const items = backlog('pk_d', 'proxy-pace', 4500, now);
      expect((await outbox.accept(items, now, DAY)).accepted).toHaveLength(4500);
      const handlers = createRelayHandlers(config, { pacer, outbox, fetch: noting(left) });
      closing.push(() => handlers.close());
      // A server reads a person through the relay's proxy twice a second while the backlog drains.
      let draining = true;
      const proxied: number[] = [];
      const reads = (async () => {
        while (draining) {
          const answer = await proxy.call(ENDPOINTS['person/get'], JSON.stringify({ limit: 1 }));
          proxied.push(answer.status);
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      })();
      await handlers.drained({ timeoutMs: 30_000 });
      draining = false;
      await reads;
      const counts = limited.emulator.calls();
      expect(counts['activities/create']!.entries).toBe(4500);
      expect(proxied.length).toBeGreaterThanOrEqual(6);
      // No mix of deliveries and proxy calls left over the platform's window, and the relay held no
      // proxy call of its own (it does when its window is full for 2 s, or when the platform answered
      // a 429: the platform in this process may still count a call late, see overByWhenTheyLeft).
      const platform429 = left.filter((call) => call.status === 429).length;
      const heldByRelay =
        proxied.filter((status) => status === 429).length - left.filter((call) => call.path.endsWith('/person/get') && call.status === 429).length;
      expect({ over: overByWhenTheyLeft(left, 10), heldByRelay: platform429 === 0 ? heldByRelay : 0 }).toEqual({ over: [], heldByRelay: 0 });
    } finally {
      await limited.close();
    }
  }, 60_000);
});
