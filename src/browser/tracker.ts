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
import { backoff, retryAfter } from './backoff.js';
import { lock } from './lock.js';
import { pageAttributes, watchHistory } from './page.js';
import { batches, envelope, MAX_BATCH_BYTES, post, type Answer } from './send.js';
import { idbStore, memoryStore } from './store.js';
import type { Consent, DropReason, Entry, Fields, Item, Meta, Store, Tracker, TrackerEvents, TrackerOptions } from './types.js';
import { CdpInputError, checkFields, checkSize, fail, isActivityId, MAX_ATTRIBUTES, PERSON_KEYS, utf8Bytes } from './validate.js';

/**
 * A random (v4) UUID, also outside secure contexts where `crypto.randomUUID` is missing:
 * `crypto.getRandomValues` works everywhere.
 */
export const uuid = (): string =>
  crypto.randomUUID?.() ??
  `${1e7}-${1e3}-${4e3}-${8e3}-${1e11}`.replace(/[018]/g, (digit) =>
    (+digit ^ (crypto.getRandomValues(new Uint8Array(1))[0]! & (15 >> (+digit / 4)))).toString(16),
  );

const CONSENTS = ['granted', 'denied', 'pending'];

// The 20 latest anonymous ids are enough to name every held item; older ones are forgotten.
const merge = (old: Meta | undefined, patch: Partial<Meta>): Meta => ({
  ...old!,
  ...patch,
  m: Object.fromEntries(Object.entries({ ...old?.m, ...patch.m }).slice(-20)),
});

/**
 * Creates a tracker. Throws `TypeError` only for a missing `relay` or `key`; after that no
 * method throws: bad input comes back as a rejected Promise, trouble as `on(...)` events.
 */
export function createTracker(options: TrackerOptions): Tracker {
  const { relay, key } = options ?? {};
  if (!relay?.trim?.() || !key?.trim?.()) throw new TypeError('cdp: options.relay and options.key are required');
  const url = relay.replace(/\/$/, '') + (options.path ?? '/collect');
  const interval = options.flushInterval ?? 1000;
  const timeout = options.timeout ?? 10_000;
  const maxItems = options.maxItems ?? 1000;
  const maxAge = options.maxAge ?? 6048e5;
  const fetchFn = options.fetch ?? ((u, i) => fetch(u, i));
  const nav: (Navigator & { globalPrivacyControl?: boolean }) | undefined = globalThis.navigator;
  const beacon = options.sendBeacon ?? (nav?.sendBeacon && ((u: string, b: string) => nav.sendBeacon(u, b)));
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const blocked = options.privacySignals && (nav?.globalPrivacyControl || nav?.doNotTrack == '1');

  const listeners: Record<string, Set<(p: unknown) => void>> = {};
  const emit = <E extends keyof TrackerEvents>(e: E, p: TrackerEvents[E]) =>
    listeners[e]?.forEach((fn) => {
      try {
        fn(p);
      } catch {}
    });
  const dropped = (item: Item, reason: DropReason) => emit('drop', { item, reason });

  // What this page knows is queued (its own writes, and what the last flush read): the exit beacon's source.
  const mirror = new Map<string, Entry>();
  let meta: Meta = { a: '', m: {} };
  let consent: Consent = options.consent ?? 'granted';
  let buf: [Entry, () => void, (e: unknown) => void][] = [];
  let seq = 0;
  let attempt = 0;
  let until = 0;
  let nextAt = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let beaconed = false;

  const primary = options.store ?? idbStore();
  let s = primary;
  // IndexedDB failed once (private mode, quota, blocked): memory for the rest of the page, seeded with what it holds.
  const store = new Proxy({} as Store, {
    get: (_, op: keyof Store) => {
      const call = (a: unknown[]) => (s[op] as (...a: unknown[]) => Promise<never>)(...a);
      // A synchronous throw (no indexedDB at all) becomes a rejection like any other failure.
      return (...a: unknown[]) =>
        new Promise((r) => r(call(a))).catch((e) => {
          if (s != primary) throw e;
          emit('storage-error', e);
          return (s = memoryStore()).put([['meta', meta], ...mirror]).then(() => call(a));
        });
    },
  });
  const withLock = lock('cdp-edge:' + key, options.locks ?? nav?.locks, store, now, uuid());

  // Counts this page's own changes, so a flush may adopt what other tabs did meanwhile.
  let version = 0;
  const saveMeta = (patch: Partial<Meta>) => {
    version++;
    meta = merge(meta, patch);
    return store.update('meta', (old) => merge(old as Meta, patch));
  };

  /** The item as sent: tracks made before identify get the person now; `undefined` = still held, `null` = orphaned by reset. */
  const resolve = ({ item, a }: Entry, m: Meta): Item | null | undefined => {
    const who = m.m[a];
    if (item.type != 'track' || item.person) return item;
    return who ? { ...item, person: who.p, user_hash: who.h } : a == m.a ? undefined : null;
  };
  // Room for the envelope and an identity token beside the items.
  const fit = (items: Item[]) =>
    batches(
      items.map((it) => [it, utf8Bytes(JSON.stringify(it))]),
      MAX_BATCH_BYTES - 2048,
    );

  const plan = (ms: number) => {
    const at = Math.max(now() + ms, until);
    if (timer && nextAt <= at) return;
    clearTimeout(timer);
    nextAt = at;
    timer = setTimeout(run, at - now());
  };

  const failed = ([status, body, after]: Answer, message?: string) => {
    const wait = backoff(++attempt, retryAfter(after, now()), random);
    until = now() + wait;
    emit('error', { status, message: message ?? body.error?.message ?? `HTTP ${status}`, retryIn: wait });
    plan(0);
  };

  const pass = async () => {
    const t0 = now();
    const v0 = version;
    const rows = await store.all();
    let m = meta;
    const live: Entry[] = [];
    const gone: string[] = [];
    const ids = new Set<unknown>();
    const drop = (e: Entry, reason: DropReason) => (gone.push(e.item.id), mirror.delete(e.item.id), dropped(e.item, reason));
    for (const [k, v] of rows) {
      if (k == 'meta') (v as Meta)?.a && (m = merge(v as Meta, {}));
      else if (k != 'lock') ids.add(k), (v as Entry)?.item?.ts ? live.push(v as Entry) : (gone.push(k as string), dropped(v as Item, 'corrupt'));
    }
    // Another tab's reset or identify (unless this page changed its own since the read began).
    if (v0 == version) meta = m;
    // Gone from the store but written before the read: another tab has sent them.
    for (const [id, e] of mirror) if (e.n < t0 * 1000 && !ids.has(id)) mirror.delete(id);
    live.sort((x, y) => x.n - y.n);
    const send: Item[] = [];
    live.forEach((e, i) => {
      const it = resolve(e, m);
      if (i < live.length - maxItems) drop(e, 'cap');
      else if (t0 - Date.parse(e.item.ts) > maxAge) drop(e, 'expired');
      else if (it === null) drop(e, 'reset');
      else mirror.set(e.item.id, e), it && send.push(it);
    });
    await store.del(gone);
    if (consent == 'denied' || (m.c ?? consent) != 'granted') return;
    // Identify first: a person must exist before their activities arrive.
    send.sort((x, y) => +(x.type == 'track') - +(y.type == 'track'));
    for (const batch of fit(send)) {
      const answer = await post(fetchFn, url, envelope(key, batch, now(), m), timeout);
      const [status, body] = answer;
      if (body.identity) await saveMeta({ i: (m.i = body.identity) });
      // A malformed or oversized body will never be accepted as it is: reject rather than loop.
      const results =
        status == 400 || status == 413 ? batch.map(({ id }) => ({ id, status: 'rejected', error: body.error?.message })) : status == 200 && body.results;
      if (!Array.isArray(results)) return failed(answer);
      const byId = new Map(batch.map((it) => [it.id, it]));
      const done: string[] = [];
      let retry: string | undefined;
      for (const r of results) {
        const item = byId.get(r?.id);
        if (!item) continue;
        if (r.status == 'retry') retry = r.error || 'retry';
        else done.push(r.id), mirror.delete(r.id);
        if (r.status == 'rejected') emit('reject', { item, error: r.error ?? 'rejected' });
      }
      await store.del(done);
      if (retry) return failed(answer, retry);
      attempt = until = 0;
    }
  };

  function run(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    if (running) return ((again = true), running);
    return (running = withLock(pass)
      .then(
        (got) => void (got || plan(interval)),
        (e) => failed([0, {}], String(e)),
      )
      .then(() => {
        running = undefined;
        if (again) (again = false), run();
      }));
  }

  const write = () => {
    const b = buf;
    buf = [];
    store.put(b.map(([e]) => [e.item.id, e])).then(
      () => {
        for (const [, done] of b) done();
        plan(mirror.size >= 100 && consent == 'granted' ? 0 : interval);
      },
      // Even the memory fallback failed: nothing is stored, so say so rather than resolve.
      (err) => b.forEach(([e, , no]) => (mirror.delete(e.item.id), no(err))),
    );
  };

  const enqueue = (item: Item): Promise<void> => {
    if (consent == 'denied') return (dropped(item, 'consent'), Promise.resolve());
    const who = meta.m[meta.a];
    if (item.type == 'track' && who) (item.person = who.p), (item.user_hash = who.h);
    const e: Entry = { item, a: meta.a, n: now() * 1000 + (seq++ % 1000) };
    mirror.set(item.id, e);
    return new Promise<void>((done, no) => {
      if (!buf.length) queueMicrotask(write);
      buf.push([e, done, no]);
    });
  };

  // Sends what this page holds with the beacon; items stay queued until a flush hears back.
  const hide = () => {
    if (beaconed || !beacon || consent != 'granted') return;
    beaconed = true;
    const first = fit([...mirror.values()].flatMap((e) => resolve(e, meta) || []))[0];
    if (first) beacon(url, envelope(key, first, now(), meta));
  };

  const item = (type: string, body: object): Item => {
    const it = { id: uuid(), type, ts: new Date(now()).toISOString(), ...body } as Item;
    checkSize(type, it);
    return it;
  };

  const tracker: Tracker = {
    async track(activityId, attributes, opts) {
      if (!isActivityId(activityId)) fail('track', `"${activityId}" is not an activity ID`);
      if (attributes != null) checkFields('track', attributes, MAX_ATTRIBUTES);
      const it = item('track', { activity_id: activityId, attributes, location: opts?.location });
      return ready.then(() => enqueue(it));
    },

    async identify(fields, opts = {}) {
      checkFields('identify', fields);
      const p: Fields = {};
      for (const k of PERSON_KEYS) if (fields[k]) p[k] = fields[k];
      if (!Object.keys(p).length) fail('identify', `needs ${PERSON_KEYS.join(' or ')}`);
      const it = item('identify', { fields, ...opts });
      return ready.then(() => {
        if (consent != 'denied') {
          void saveMeta({ m: { [meta.a]: { p, h: opts.user_hash } } });
        }
        return enqueue(it);
      });
    },

    page: (attributes) => tracker.track(options.pageActivity ?? 'act:cm:page-view', { ...pageAttributes(), ...attributes }),

    flush: () => ready.then(() => (running ? running.then(run) : run())),

    reset: () => ready.then(() => saveMeta({ a: uuid(), i: undefined })),

    async consent(c) {
      if (!CONSENTS.includes(c)) throw new CdpInputError(`cdp.consent(): "${c}" is not granted, denied or pending`);
      return ready.then(() => {
        consent = blocked ? 'denied' : c;
        if (c != 'denied') return saveMeta({ c }).then(() => void (consent == 'granted' && plan(0)));
        for (const [e, done] of buf.splice(0)) dropped(e.item, 'consent'), done();
        mirror.clear();
        version++;
        // The queue is emptied: a new queue id is as good as the old.
        const m = (meta = { a: uuid(), q: uuid(), m: {}, c });
        return store.clear().then(() => store.update('meta', () => m));
      });
    },

    on(event, fn) {
      const set = (listeners[event] ??= new Set());
      set.add(fn as (p: unknown) => void);
      return () => void set.delete(fn as (p: unknown) => void);
    },
  };

  // Atomic across tabs: two first pages agree on one anonymous id and one queue id instead of
  // each making its own. A queue stored by an older snippet gets its queue id here.
  const ready = store
    .update('meta', (o) => {
      meta = (o as Meta)?.a ? merge(o as Meta, {}) : { a: uuid(), m: {} };
      meta.q ??= uuid();
      return meta;
    })
    .then(async () => {
      consent = blocked ? 'denied' : (meta.c ?? consent);
      // Privacy signals work like `denied` without recording a choice: nothing is kept.
      if (blocked) await store.clear();
      plan(0);
    });

  if (typeof addEventListener == 'function') {
    addEventListener('online', () => ((until = attempt = 0), run()));
    addEventListener('pagehide', hide);
    document.addEventListener('visibilitychange', () => (document.visibilityState == 'hidden' ? hide() : (beaconed = false)));
  }
  if (options.spa) watchHistory(() => void tracker.page().catch(() => {})), void tracker.page().catch(() => {});
  return tracker;
}
