// Identify at page load, in the two forms the README shows, while the load's own flush is
// running: the anonymous events held before it reach the relay with (or after) the identify,
// and a relay that verifies identity accepts them. Each step is an awaited event, not a timer.
import { describe, expect, it } from 'vitest';
import { createTracker, idbStore, install, type Cdp, type Item, type Store } from '../../src/browser/index.js';
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

/** The IndexedDB store whose full reads (a flush's first step) wait until the test lets them go. */
function heldReads() {
  const inner = idbStore('pk_test');
  let letGo!: () => void;
  const released = new Promise<void>((resolve) => (letGo = resolve));
  let began!: () => void;
  const reading = new Promise<void>((resolve) => (began = resolve));
  const store: Store = {
    all: () => {
      began();
      return released.then(() => inner.all());
    },
    write: (changes) => inner.write(changes),
    clear: () => inner.clear(),
  };
  return { store, reading, letGo };
}

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

  it('createTracker(); await identify(…): the held event goes with the identify while the load flush runs', async () => {
    const relay = verifyingRelay();
    await earlierPage(relay);
    const { store, reading, letGo } = heldReads();
    const t = createTracker(options(relay, store));
    const seen: string[] = [];
    t.on('drop', ({ reason }) => seen.push(`drop ${reason}`));
    t.on('reject', ({ error }) => seen.push(`reject ${error}`));
    // The flush the page starts on load is reading the store…
    await reading;
    const identified = t.identify(ann, { user_hash: HASH });
    // …when identify has begun (its item is still being written), and the flush goes on.
    await microtasks();
    letGo();
    await identified;
    await t.flush();
    expect(seen).toEqual([]);
    expect(outcome(relay)).toEqual([
      ['identify', ann],
      ['act:cm:landed', ann],
    ]);
    expect(relay.sent.every((sent) => sent.body.batch.length === 2)).toBe(true);
    expect(await queued()).toEqual([]);
  });

  it("cdp('init', …); cdp('identify', …) through the stub: the same", async () => {
    const relay = verifyingRelay();
    await earlierPage(relay);
    const { store, reading, letGo } = heldReads();
    const w: { cdp?: Cdp } = {};
    new Function('window', 'window.cdp=window.cdp||function(){(cdp.q=cdp.q||[]).push(arguments)};var cdp=window.cdp;')(w);
    w.cdp!('init', options(relay, store));
    const seen: string[] = [];
    w.cdp!('on', 'drop', ({ reason }: { reason: string }) => seen.push(`drop ${reason}`));
    const cdp = install(w);
    await reading;
    const identified = cdp('identify', ann, { user_hash: HASH });
    await microtasks();
    letGo();
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
