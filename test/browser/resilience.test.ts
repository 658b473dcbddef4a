import { createStore, set } from 'idb-keyval';
import { afterEach, describe, expect, it } from 'vitest';
import { backoff, retryAfter } from '../../src/browser/backoff.js';
import { memoryStore, type Store } from '../../src/browser/index.js';
import { ann, fakeRelay, queued, tracker, webLocks } from './support.js';

/** A store that fails like IndexedDB in private mode or over quota. */
const broken = (): Store => {
  const no = () => Promise.reject(new DOMException('The quota has been exceeded.', 'QuotaExceededError'));
  return { all: no, write: no, clear: no };
};

describe('storage failures', () => {
  it('falls back to memory, says so once, and keeps working', async () => {
    const { t, relay, events } = await tracker({ store: broken() });
    await t.identify(ann);
    await t.track('act:cm:viewed');
    await t.flush();
    expect(events['storage-error']).toHaveLength(1);
    expect((events['storage-error'][0] as DOMException).name).toBe('QuotaExceededError');
    expect(relay.items().map((i) => i.type)).toEqual(['identify', 'track']);
  });

  it('fails over mid-page without losing what the page holds', async () => {
    const real = memoryStore();
    let fail = false;
    const flaky = Object.fromEntries(
      (['all', 'write', 'clear'] as const).map((op) => [
        op,
        (...a: never[]) => (fail ? Promise.reject(new Error('blocked')) : (real[op] as (...a: never[]) => Promise<unknown>)(...a)),
      ]),
    ) as unknown as Store;
    const { t, relay, events } = await tracker({ store: flaky, consent: 'store-only' });
    await t.identify(ann);
    fail = true;
    await t.track('act:cm:viewed');
    await t.consent('granted');
    await t.flush();
    expect(events['storage-error']).toHaveLength(1);
    expect(relay.items().map((i) => i.type)).toEqual(['identify', 'track']);
  });

  describe('without IndexedDB at all', () => {
    const saved = globalThis.indexedDB;
    afterEach(() => {
      globalThis.indexedDB = saved;
    });
    it('works from memory', async () => {
      delete (globalThis as { indexedDB?: unknown }).indexedDB;
      const { t, relay, events } = await tracker();
      await t.identify(ann);
      await t.flush();
      expect(events['storage-error']).toHaveLength(1);
      expect(relay.items()).toHaveLength(1);
    });
  });

  it('drops a corrupted entry once instead of retrying it forever', async () => {
    const { t, relay, events } = await tracker();
    await set(['pk_test', 'garbage'], { nonsense: true }, createStore('cdp-edge', 'queue'));
    await t.identify(ann);
    await t.flush();
    await t.flush();
    expect(events.drop).toEqual([{ item: { nonsense: true }, reason: 'corrupt' }]);
    expect(relay.items()).toHaveLength(1);
    expect(await queued()).toEqual([]);
  });
});

describe('bounds', () => {
  it('keeps at most maxItems, dropping the oldest first with a drop event', async () => {
    const { t, events } = await tracker({ consent: 'store-only', maxItems: 5 });
    for (let n = 0; n < 8; n++) await t.track('act:cm:viewed', { 'int:cm:n': n });
    await t.flush();
    expect(events.drop.map((d) => [d.reason, (d.item as { attributes: Record<string, number> }).attributes['int:cm:n']])).toEqual([
      ['cap', 0],
      ['cap', 1],
      ['cap', 2],
    ]);
    expect((await queued()).map((e) => e.item.type === 'track' && e.item.attributes!['int:cm:n']).sort()).toEqual([3, 4, 5, 6, 7]);
  });

  it('drops items older than maxAge (7 days by default)', async () => {
    let now = Date.parse('2026-11-01T00:00:00Z');
    const { t, events } = await tracker({ consent: 'store-only', now: () => now });
    await t.track('act:cm:old');
    now += 6 * 86_400_000;
    await t.track('act:cm:recent');
    now += 2 * 86_400_000;
    await t.flush();
    expect(events.drop).toEqual([{ item: expect.objectContaining({ activity_id: 'act:cm:old' }), reason: 'expired' }]);
    expect(await queued()).toHaveLength(1);
  });
});

describe('backoff', () => {
  it('doubles from 1 s up to 5 min, with jitter between half and all of it', () => {
    expect([1, 2, 3, 4].map((a) => backoff(a, () => 1))).toEqual([1000, 2000, 4000, 8000]);
    expect(backoff(2, () => 0)).toBe(1000);
    expect(backoff(30, () => 1)).toBe(300_000);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-11-23T10:00:00Z');
    expect(retryAfter('120', now)).toBe(120_000);
    expect(retryAfter('Mon, 23 Nov 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(retryAfter(null, now)).toBe(0);
    expect(retryAfter(undefined, now)).toBe(0);
    expect(retryAfter('', now)).toBe(0);
    expect(retryAfter('  ', now)).toBe(0);
    expect(retryAfter('soon', now)).toBe(0);
  });

  it('reads Retry-After: 0 as no wait, not as a date in the year 2000', () => {
    const now = Date.parse('2026-11-23T10:00:00Z');
    expect(retryAfter('0', now)).toBe(0);
    expect(retryAfter(' 0 ', now)).toBe(0);
    expect(retryAfter('1.5', now)).toBe(1500);
    expect(retryAfter('Mon, 23 Nov 2026 09:00:00 GMT', now)).toBe(0);
  });

  it('waits longer after each failure in a row without Retry-After, and resets after a success', async () => {
    let status = 503;
    const relay = fakeRelay(() => (status === 200 ? {} : Response.json({ error: { code: 'upstream_unavailable', message: 'down' } }, { status })));
    const { t, events } = await tracker({ random: () => 1 }, relay);
    await t.identify(ann);
    await t.flush();
    await t.flush();
    await t.flush();
    expect(events.error.map((e) => e.retryIn)).toEqual([1000, 2000, 4000]);
    expect(events.error[0]).toMatchObject({ status: 503, message: 'down' });
    status = 200;
    await t.flush();
    expect(await queued()).toEqual([]);
    status = 503;
    await t.track('act:cm:viewed');
    await t.flush();
    expect(events.error.at(-1)!.retryIn).toBe(1000);
  });

  it("waits the relay's Retry-After, however many refusals in a row, and such waits do not grow the backoff", async () => {
    // A heavy sender behind its visitor rate limit is refused again and again: each 429 says the
    // token comes in 1 s, and the browser comes back then, not after 2, 4, 8, 16 s.
    let answer: 'limited' | 'down' | 'unavailable' | 'outbox full' = 'limited';
    const relay = fakeRelay(({ body }) => {
      // The relay takes some of a batch and answers the rest `retry`, with when they will fit.
      if (answer === 'outbox full')
        return Response.json({ results: body.batch.map(({ id }) => ({ id, status: 'retry' })) }, { headers: { 'retry-after': '2' } });
      const headers: Record<string, string> = answer === 'down' ? {} : { 'retry-after': answer === 'limited' ? '1' : '5' };
      return Response.json({ error: { code: 'x', message: answer } }, { status: answer === 'limited' ? 429 : 503, headers });
    });
    const { t, events } = await tracker({ random: () => 1 }, relay);
    await t.identify(ann);
    for (let i = 0; i < 5; i++) await t.flush();
    expect(events.error.map((e) => e.retryIn)).toEqual([1000, 1000, 1000, 1000, 1000]);
    // a failure that says nothing doubles from where failures without Retry-After left it
    answer = 'down';
    await t.flush();
    await t.flush();
    answer = 'unavailable';
    await t.flush();
    answer = 'outbox full';
    await t.flush();
    expect(events.error.slice(5).map((e) => e.retryIn)).toEqual([1000, 2000, 5000, 2000]);
    expect(relay.sent).toHaveLength(9);
  });

  it('going online ends the wait and sends at once', async () => {
    let down = true;
    const relay = fakeRelay(() => (down ? Response.json({ error: { message: 'down' } }, { status: 503, headers: { 'retry-after': '600' } }) : {}));
    const { t, events } = await tracker({}, relay);
    await t.identify(ann);
    await t.flush();
    expect(events.error[0]!.retryIn).toBeGreaterThanOrEqual(600_000);
    down = false;
    dispatchEvent(new Event('online'));
    await expect.poll(async () => (await queued()).length).toBe(0);
  });

  it('retries on its own after the wait, without a call to flush', async () => {
    let down = true;
    const relay = fakeRelay(() => (down ? Response.json({ error: { message: 'down' } }, { status: 503, headers: { 'retry-after': '0' } }) : {}));
    const { t } = await tracker({ random: () => 0 }, relay);
    await t.identify(ann);
    await t.flush();
    down = false;
    await expect.poll(async () => (await queued()).length, { timeout: 3000 }).toBe(0);
    expect(relay.sent).toHaveLength(2);
  });
});

describe('one tab at a time', () => {
  it('does not send while another tab holds the Web Lock', async () => {
    const names: string[] = [];
    const busy = {
      request: async (name: string, _o: unknown, fn: (l: null) => unknown) => {
        names.push(name);
        return fn(null);
      },
    } as unknown as LockManager;
    const { t, relay } = await tracker({ locks: busy });
    await t.identify(ann);
    await t.flush();
    expect(relay.sent).toEqual([]);
    expect(names[0]).toBe('cdp-edge:pk_test');
    expect(await queued()).toHaveLength(1);
  });

  it('sends under the Web Lock when it is free', async () => {
    const free = {
      request: async (_n: string, o: { ifAvailable: boolean }, fn: (l: object) => unknown) => {
        expect(o.ifAvailable).toBe(true);
        return fn({});
      },
    };
    const { t, relay } = await tracker({ locks: free as unknown as LockManager });
    await t.identify(ann);
    await t.flush();
    expect(relay.items()).toHaveLength(1);
  });

  it('two trackers on one store, under one Web Lock, send each item exactly once', async () => {
    const relay = fakeRelay();
    const locks = webLocks();
    const a = await tracker({ locks }, relay);
    const b = await tracker({ locks }, relay);
    await a.t.identify(ann);
    await Promise.all(Array.from({ length: 30 }, (_, n) => (n % 2 ? a : b).t.track('act:cm:viewed', { 'int:cm:n': n })));
    await Promise.all([a.t.flush(), b.t.flush(), a.t.flush(), b.t.flush()]);
    await a.t.flush();
    await b.t.flush();
    const ids = relay.items().map((i) => i.id);
    expect(ids).toHaveLength(31);
    expect(new Set(ids).size).toBe(31);
  });
});

describe('page exit', () => {
  it('beacons what is queued on pagehide and keeps it until a flush hears back', async () => {
    const beacons: { url: string; body: string }[] = [];
    const { t, relay } = await tracker({
      sendBeacon: (url, body) => {
        beacons.push({ url, body });
        return true;
      },
    });
    await t.identify(ann);
    await t.track('act:cm:viewed');
    dispatchEvent(new Event('pagehide'));
    dispatchEvent(new Event('pagehide'));
    expect(beacons).toHaveLength(1);
    expect(beacons[0]!.url).toBe('https://t.example.com/collect');
    const body = JSON.parse(beacons[0]!.body);
    expect(body.key).toBe('pk_test');
    expect(body.batch.map((i: { type: string }) => i.type)).toEqual(['identify', 'track']);
    expect(await queued()).toHaveLength(2);
    await t.flush();
    expect(relay.items()).toHaveLength(2);
    expect(await queued()).toEqual([]);
  });

  it('beacons when the page is hidden, once until it is visible again, each beacon under 64 kB', async () => {
    const beacons: string[] = [];
    const { t } = await tracker({
      sendBeacon: (_u, b) => {
        beacons.push(b);
        return true;
      },
    });
    await t.identify(ann);
    await Promise.all(Array.from({ length: 20 }, () => t.track('act:cm:viewed', { 'str:cm:blob': 'x'.repeat(5_000) })));
    const show = (state: string) => {
      Object.defineProperty(document, 'visibilityState', { value: state, configurable: true });
      document.dispatchEvent(new Event('visibilitychange'));
    };
    show('hidden');
    show('hidden');
    expect(beacons).toHaveLength(1);
    show('visible');
    show('hidden');
    expect(beacons).toHaveLength(2);
    for (const b of beacons) expect(new TextEncoder().encode(b).length).toBeLessThanOrEqual(64 * 1024);
    expect(JSON.parse(beacons[0]!).batch[0].type).toBe('identify');
    Object.defineProperty(document, 'visibilityState', { value: 'visible', configurable: true });
  });

  it('sends no beacon without consent', async () => {
    const beacons: string[] = [];
    const { t } = await tracker({
      consent: 'store-only',
      sendBeacon: (_u, b) => {
        beacons.push(b);
        return true;
      },
    });
    await t.identify(ann);
    dispatchEvent(new Event('pagehide'));
    expect(beacons).toEqual([]);
  });
});
