// Identify at page load, in the two forms the README shows, while the load's own flush is
// running: the anonymous events held before it reach the relay with (or after) the identify,
// and a relay that verifies identity accepts them. Each step is an awaited event (or a fake timer), not a wait.
import { describe, expect, it, vi } from 'vitest';
import { createTracker, idbStore, install, type Cdp, type Item, type Store } from '../../src/browser/index.js';
import { WRITE_DELAY_MS } from '../../src/browser/queue.js';
import { ann, fakeRelay, queued, tracker } from './support.js';

const HASH = 'ab'.repeat(32);

/** A relay with `verify: required`: a track is accepted once an identify of its person was, in its batch or before. */
function verifyingRelay() {
  const verified = new Set<unknown>();
  return fakeRelay(({ body }) => {
    for (const item of body.batch) if (item.type === 'identify' && item.user_hash === HASH) verified.add(item.fields['str::email']);
    const results = body.batch.map((item: Item) =>
      item.type === 'identify' || verified.has(item.person?.['str::email'])
        ? { id: item.id, status: 'accepted' }
        : { id: item.id, status: 'rejected', reason: 'unverified', error: 'not a verified identity of this browser' },
    );
    return Response.json({ results });
  });
}

/**
 * The IndexedDB store of the page, stepped by the test: its full reads (a flush's first step) wait
 * until `letGo`, and hand their rows to the flush only once `handOver` (set by the test) resolves;
 * `writing` resolves once a write of items (not of meta) begins.
 */
function steppedStore() {
  const inner = idbStore('pk_test');
  let letGo!: () => void;
  const released = new Promise<void>((resolve) => (letGo = resolve));
  let began!: () => void;
  const reading = new Promise<void>((resolve) => (began = resolve));
  let wrote!: () => void;
  const writing = new Promise<void>((resolve) => (wrote = resolve));
  let readDone!: () => void;
  const read = new Promise<void>((resolve) => (readDone = resolve));
  const steps = { reading, writing, read, letGo, handOver: Promise.resolve() };
  const store: Store = {
    all: () => {
      began();
      return released.then(async () => {
        const rows = await inner.all();
        readDone();
        await steps.handOver;
        return rows;
      });
    },
    write: (changes) => {
      if (changes.some(([row]) => row !== 'meta')) wrote();
      return inner.write(changes);
    },
    clear: () => inner.clear(),
  };
  return { store, steps };
}

/** Resolves once every microtask queued so far, and every one those queue, has run. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

const microtasks = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

const options = (relay: ReturnType<typeof fakeRelay>, store: Store) => ({
  relay: 'https://t.example.com',
  key: 'pk_test',
  fetch: relay.fetch,
  store,
  locks: false as const,
  sendBeacon: false as const,
  flushInterval: 3_600_000,
});

/** What the relay ended up accepting, and the drops and rejections the page saw. */
function outcome(relay: ReturnType<typeof fakeRelay>) {
  return relay.items().map((item) => (item.type === 'track' ? [item.activity_id, item.person] : ['identify', item.fields]));
}

describe('identify at page load', () => {
  // An earlier page of this visitor tracked while anonymous: the event waits in the queue for their person.
  const earlierPage = async (relay: ReturnType<typeof fakeRelay>) => {
    const { t } = await tracker({}, relay);
    await t.track('act:cm:landed');
    expect(relay.sent).toEqual([]);
  };

  // Where the identify's write begins (on the queue's 10 ms gathering timer) against the flush the
  // page started on load: before its read, while the read runs, or after it picked what to send. On
  // a loaded machine any of the three happens; each is forced here, and what a visitor relies on
  // holds in all: no event refused, each sent once, the identify first. Where the identify is not
  // stored before the flush picks, the held event goes with it, in one batch.
  const wheres = [
    ['before the read', [['identify', 'act:cm:landed']]],
    ['while the read runs', [['identify'], ['act:cm:landed']]],
    ['after the flush picked what to send', [['identify', 'act:cm:landed']]],
  ] as const;
  it.each(wheres)(
    'createTracker(); await identify(…) while the load flush runs, its item written %s: the held event goes once, after the identify',
    async (where, batches) => {
      const relay = verifyingRelay();
      await earlierPage(relay);
      const { store, steps } = steppedStore();
      const t = createTracker(options(relay, store));
      const seen: string[] = [];
      t.on('drop', ({ reason }) => seen.push(`drop ${reason}`));
      t.on('reject', ({ error }) => seen.push(`reject ${error}`));
      // The flush the page starts on load is reading the store…
      await steps.reading;
      // …when identify begins: its item waits for the queue's gathering timer to be written.
      if (where === 'after the flush picked what to send') vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      try {
        const identified = t.identify(ann, { user_hash: HASH });
        if (where === 'before the read') await steps.writing;
        // The read has begun (it began at letGo, before any timer could run): its rows reach the flush once the write began.
        if (where === 'while the read runs') steps.handOver = steps.writing;
        steps.letGo();
        if (where === 'after the flush picked what to send') {
          await steps.read;
          await settled();
          // The flush is over: the held event did not go ahead of the identify, which was not written yet.
          expect(relay.sent).toEqual([]);
          vi.advanceTimersByTime(WRITE_DELAY_MS);
          vi.useRealTimers();
        }
        await identified;
      } finally {
        vi.useRealTimers();
      }
      await t.flush();
      expect(seen).toEqual([]);
      expect(outcome(relay)).toEqual([
        ['identify', ann],
        ['act:cm:landed', ann],
      ]);
      expect(relay.sent.map((sent) => sent.body.batch.map((item) => (item.type === 'track' ? item.activity_id : item.type)))).toEqual(batches);
      expect(await queued()).toEqual([]);
    },
  );

  it("cdp('init', …); cdp('identify', …) through the stub: the same", async () => {
    const relay = verifyingRelay();
    await earlierPage(relay);
    const { store, steps } = steppedStore();
    const w: { cdp?: Cdp } = {};
    new Function('window', 'window.cdp=window.cdp||function(){(cdp.q=cdp.q||[]).push(arguments)};var cdp=window.cdp;')(w);
    w.cdp!('init', options(relay, store));
    const seen: string[] = [];
    w.cdp!('on', 'drop', ({ reason }: { reason: string }) => seen.push(`drop ${reason}`));
    const cdp = install(w);
    await steps.reading;
    const identified = cdp('identify', ann, { user_hash: HASH });
    await microtasks();
    steps.letGo();
    await identified;
    await cdp.flush!();
    expect(seen).toEqual([]);
    expect(outcome(relay)).toEqual([
      ['identify', ann],
      ['act:cm:landed', ann],
    ]);
    expect(await queued()).toEqual([]);
  });

  it('resolves identify once its person is known: a track right after it carries the person', async () => {
    const relay = verifyingRelay();
    const { t } = await tracker({}, relay);
    await t.identify(ann, { user_hash: HASH });
    await t.track('act:cm:next');
    const [, track] = await queued().then((entries) => entries.sort((x, y) => x.n - y.n));
    expect(track!.item).toMatchObject({ activity_id: 'act:cm:next', person: ann, user_hash: HASH });
  });
});

describe('a track the relay refuses as unverified', () => {
  it('is dropped with a drop event naming the reason, beside the reject event', async () => {
    const relay = verifyingRelay();
    const { t, events } = await tracker({}, relay);
    // No user_hash: the relay cannot verify this person.
    await t.identify(ann);
    await t.track('act:cm:viewed');
    await t.flush();
    expect(events.reject.map(({ item }) => item.type)).toEqual(['track']);
    expect(events.drop).toEqual([{ item: expect.objectContaining({ activity_id: 'act:cm:viewed' }), reason: 'unverified' }]);
    expect(await queued()).toEqual([]);
  });
});
