/**
 * The tracker: every `track`/`identify` is written to IndexedDB before its Promise resolves,
 * and stays there until the relay has answered for it.
 *
 * @example
 * const cdp = createTracker({ relay: 'https://t.example.com', key: 'pk_live_123' });
 * await cdp.identify({ 'str::email': 'ann@example.com' });
 * await cdp.track('act:cm:signed-up', { 'str:cm:plan': 'pro' });
 * @module
 */
import { retryAfter } from './backoff.js';
import { createEvents } from './events.js';
import { lock, watchTabs } from './lock.js';
import { joinMeta, mergeMeta, storedMeta, toDevice } from './meta.js';
import { attribution, pageAttributes, watchHistory, watchPage } from './page.js';
import { createQueue, overCap } from './queue.js';
import { createScheduler } from './scheduler.js';
import { createOutgoing, personBytes } from './outgoing.js';
import { type Answer, envelope, MAX_BATCH_ITEMS, post } from './send.js';
import { idbStore, memoryStore } from './store.js';
import { createSettle } from './answer.js';
import type { AttributionKey, Consent, DropReason, Entry, Fields, Item, Meta, Store, Tracker, TrackerOptions } from './types.js';
import { uuid } from './uuid.js';
import { CONSENTS, checkFields, ERRORS, fail, isActivityId, MAX_ATTRIBUTES, newItem, PERSON_KEYS } from './validate.js';

export { uuid };

/**
 * Creates a tracker. Throws `TypeError` only for a missing `relay` or `key`; after that no
 * method throws: bad input comes back as a rejected Promise, trouble as `on(...)` events.
 */
export function createTracker(options: TrackerOptions): Tracker {
  const { relay, key } = options ?? {};
  if (!relay?.trim?.() || !key?.trim?.()) throw new TypeError(`createTracker(): ${ERRORS.missingOptions}`);
  const url = relay.replace(/\/$/, '') + (options.path ?? '/collect');
  const interval = options.flushInterval ?? 1000;
  const timeout = options.timeout ?? 10_000;
  const maxItems = options.maxItems ?? 1000;
  const maxAge = options.maxAge ?? 6048e5;
  const fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
  const nav: (Navigator & { globalPrivacyControl?: boolean }) | undefined = globalThis.navigator;
  const beacon = options.sendBeacon ?? nav?.sendBeacon?.bind(nav);
  const now = options.now ?? Date.now;
  const blocked = options.privacySignals && (nav?.globalPrivacyControl || nav?.doNotTrack === '1');
  const { emit, on } = createEvents();
  const scheduler = createScheduler(() => void run(), now, options.random ?? Math.random);

  // Replaced, never changed in place: a full read adopts the stored meta (what other tabs did)
  // only while this page's own is the one it had when the read began.
  let meta: Meta = { a: '', m: {} };
  let consent: Consent = options.consent ?? 'granted';
  let order = 0;
  let running: Promise<void> | undefined;
  let runAgain = false;
  let beaconed = false;

  // Until another tab says it changed the store, this page's index is the truth.
  const name = 'cdp-edge:' + key;
  let stale = true;
  const announce = watchTabs(name, () => {
    stale = true;
    scheduler.plan(interval);
  });

  const primary = options.store ?? idbStore(key);
  // `pending`: the queue lives in memory until the visitor chooses (nothing on the device before).
  const waiting = memoryStore();
  let current = consent === 'pending' ? waiting : primary;
  // IndexedDB failed once (private mode, quota, blocked): memory for the rest of the page, whose index keeps what it held.
  const store = new Proxy({} as Store, {
    get: (_, operation: keyof Store) => {
      // Every operation takes one argument at most (write's changes).
      const call = (changes: never) => (current[operation] as (changes: never) => Promise<never>)(changes);
      // A synchronous throw (no indexedDB at all) becomes a rejection like any other failure.
      return (changes: never) =>
        new Promise((resolve) => resolve(call(changes))).catch((error) => {
          if (current !== primary) throw error;
          emit('storage-error', error);
          current = memoryStore();
          return call(changes);
        });
    },
  });
  const withLock = lock(name, options.locks ?? nav?.locks);

  const drop = (entries: Entry[], reason: DropReason) => {
    for (const entry of entries) emit('drop', { item: entry.item, reason });
    queue.remove(entries.map((entry) => entry.item.id));
  };

  // The oldest items go first when the queue holds more than `maxItems`.
  const enforceCap = () => drop(overCap(queue.held, maxItems), 'cap');

  const queue = createQueue(store, (entries) => {
    for (const entry of entries) emit('queue', { item: entry.item });
    announce();
    // A flush soon, at once for a full batch; it runs only if something can go.
    if (entries.length && mayConsentSend()) scheduler.plan(entries.length >= MAX_BATCH_ITEMS ? 0 : interval);
  });

  const saveMeta = (patch: Partial<Meta>) => {
    meta = mergeMeta(meta, patch);
    return store.write([['meta', (old: unknown) => mergeMeta(storedMeta(old) ?? meta, patch)]]).then(announce);
  };

  const mayConsentSend = () => consent !== 'denied' && (meta.c ?? consent) === 'granted';

  /** Reads the store in full: items, deletions and meta changes of other tabs. */
  const adopt = async () => {
    const before = meta;
    const writes = queue.writes;
    stale = false;
    const rows = await store.all();
    // Once on memory, this page's index is the whole queue: the memory store is never read back.
    if (current !== primary) return;
    const corrupt = queue.adopt(rows, writes);
    const stored = storedMeta(new Map(rows).get('meta'));
    // Another tab's reset or identify, unless this page changed its own since the read began.
    if (stored && before === meta) meta = mergeMeta(stored);
    for (const value of corrupt) emit('drop', { item: value as Item, reason: 'corrupt' });
    enforceCap();
  };

  const failed = ([status, , retryAfterHeader]: Answer, message: string) => {
    const wait = scheduler.failed(retryAfter(retryAfterHeader, now()));
    emit('error', { status, message, retryIn: wait });
    scheduler.plan(0);
  };

  const sendable = createOutgoing(queue, maxAge, drop);
  const settle = createSettle(queue, emit);

  /** Posts one batch and settles its items; `false` when the flush must stop (backing off). */
  const send = async (batch: Item[]) => {
    emit('send', { items: batch, beacon: false });
    const answer = await post(fetchFn, url, envelope(key, batch, now(), meta.q, meta.i), timeout);
    const [, body] = answer;
    if (body.identity) await saveMeta({ i: body.identity });
    // The relay's dedupe window, kept for the next page too.
    if (body.window && body.window !== meta.w) await saveMeta({ w: body.window });
    const stop = settle(batch, answer);
    if (stop === undefined) scheduler.succeeded();
    else failed(answer, stop);
    return stop === undefined;
  };

  const flushOnce = async () => {
    const startedAt = now();
    if (stale) await adopt();
    const ready = sendable(meta, startedAt, true);
    if (mayConsentSend()) for (const batch of ready) if (!(await send(batch))) return;
  };

  // A flush that cannot send does not run: nothing to adopt, nothing that may go.
  async function run(): Promise<void> {
    scheduler.cancel();
    if (running !== undefined) {
      runAgain = true;
      return running;
    }
    if (!stale && !(mayConsentSend() && sendable(meta, now()).length)) return;
    // Another tab holds the lock: try again later.
    running = withLock(flushOnce, () => scheduler.plan(interval))
      .catch((error) => failed([0, {}], String(error)))
      .then(() => {
        running = undefined;
        if (runAgain) {
          runAgain = false;
          void run();
        }
      });
    return running;
  }

  const enqueue = async (item: Item, bytes: number): Promise<void> => {
    if (consent === 'denied') return emit('drop', { item, reason: 'consent' });
    const who = meta.m[meta.a];
    if (item.type === 'track' && who) {
      item.person = who.p;
      item.user_hash = who.h;
      bytes += personBytes(who);
    }
    const stored = queue.add({ item, a: meta.a, n: now() * 1000 + (order++ % 1000) }, bytes);
    // Over the cap, the oldest go in the same transaction as the new item.
    enforceCap();
    return stored;
  };

  // Sends what this page holds with the beacon; items stay queued until a flush hears back.
  const hide = () => {
    void queue.settle();
    if (beaconed || !beacon || !mayConsentSend()) return;
    beaconed = true;
    const first = sendable(meta, now())[0];
    if (!first) return;
    emit('send', { items: first, beacon: true });
    beacon(url, envelope(key, first, now(), meta.q, meta.i));
  };

  const tracker: Tracker = {
    async track(activityId, attributes, trackOptions) {
      if (!isActivityId(activityId)) fail('track', ERRORS.activityId, activityId);
      if (attributes != null) checkFields('track', attributes, MAX_ATTRIBUTES);
      const [item, bytes] = newItem('track', { activity_id: activityId, attributes, location: trackOptions?.location }, now());
      return ready.then(() => enqueue(item, bytes));
    },

    async identify(fields, identifyOptions = {}) {
      checkFields('identify', fields);
      const person: Fields = {};
      for (const field of PERSON_KEYS) if (fields[field]) person[field] = fields[field];
      if (!Object.keys(person).length) fail('identify', ERRORS.noPerson);
      await ready;
      // First-touch attribution as the person fields the site chose; the site's own values win.
      const firstTouch: Fields = {};
      for (const [name, fieldId] of Object.entries(options.firstTouchFields ?? {})) firstTouch[fieldId!] = meta.t?.[name as AttributionKey];
      const [item, bytes] = newItem('identify', { fields: { ...firstTouch, ...fields }, ...identifyOptions }, now());
      const anonymousId = meta.a;
      // Held tracks learn their person only once this identify is stored: a flush running
      // meanwhile must not send them ahead of it (the relay would refuse them as unverified);
      // from then on the identify goes first, in their batch or an earlier one.
      await enqueue(item, bytes);
      if (consent !== 'denied') await saveMeta({ m: { [anonymousId]: { p: person, h: identifyOptions.user_hash } } });
    },

    page(attributes) {
      const touch = attribution(location.href, document.referrer);
      const stored = tracker.track(options.pageActivity ?? 'act:cm:page-view', { ...pageAttributes(touch), ...attributes });
      // The first touch stays with the visitor (until `reset`), for `firstTouchFields`.
      void ready.then((): unknown => !meta.t && consent !== 'denied' && Object.keys(touch).length && saveMeta({ t: touch }));
      return stored;
    },

    flush: () =>
      ready.then(async () => {
        // Everything tracked before the call goes: what is still gathering is written first.
        await queue.settle();
        stale = true;
        // After the flush that may be running, one that surely sees all of it.
        await running;
        await run();
        // And what was sent has left the store when the Promise resolves.
        await queue.settle();
      }),

    reset: () => ready.then(() => saveMeta({ a: uuid(), i: undefined, t: undefined })),

    async consent(choice) {
      if (!CONSENTS.includes(choice)) fail('consent', ERRORS.consentState, choice);
      await ready;
      consent = blocked ? 'denied' : choice;
      if (choice !== 'denied') {
        if (current === waiting && consent !== 'pending') {
          // The choice allows storing: what the page kept in memory goes to the device.
          const rows = await current.all();
          current = primary;
          stale = true;
          await store.write(toDevice(rows, (old) => (meta = joinMeta(meta, storedMeta(old), queue.held))));
        }
        await saveMeta({ c: choice });
        return scheduler.plan(0);
      }
      // Every item leaves, stored or still being written: the store is cleared below.
      drop(overCap(queue.held, 0), 'consent');
      // A new anonymous id and nothing else; the queue id stays, it names the browser, not the person.
      meta = { a: uuid(), m: {}, c: choice, q: meta.q };
      await store.clear();
      // In memory until a choice: the device keeps nothing, not even the denial; earlier pages' rows go.
      if (current === waiting) await primary.clear().catch(() => {});
      await store.write([['meta', meta]]);
      announce();
    },

    on,
  };

  // Atomic across tabs: two first pages agree on one anonymous id and one queue id.
  const ready = store.write([['meta', (old: unknown) => (meta = mergeMeta(storedMeta(old)))]]).then(async () => {
    consent = blocked ? 'denied' : (meta.c ?? consent);
    // Privacy signals work like `denied` without recording a choice: nothing is kept.
    if (blocked) await store.clear();
    scheduler.plan(0);
  });

  watchPage(
    () => {
      scheduler.succeeded();
      void run();
    },
    hide,
    (): unknown => (beaconed = false),
  );
  if (options.spa) watchHistory(() => void tracker.page().catch(() => {}));
  return tracker;
}
