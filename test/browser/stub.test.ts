import { afterEach, describe, expect, it, vi } from 'vitest';
import { install, type Cdp } from '../../src/browser/index.js';
import { ann, fakeRelay, queued } from './support.js';

/** The inline stub of the script tag, run as the page would run it. */
function stub(): { cdp?: Cdp } {
  const w: { cdp?: Cdp } = {};
  new Function('window', 'window.cdp=window.cdp||function(){(cdp.q=cdp.q||[]).push(arguments)};var cdp=window.cdp;')(w);
  return w;
}

const options = (relay: ReturnType<typeof fakeRelay>) => ({
  relay: 'https://t.example.com',
  key: 'pk_test',
  fetch: relay.fetch,
  locks: false,
  sendBeacon: false,
  flushInterval: 3_600_000,
});

afterEach(() => vi.restoreAllMocks());

describe('window.cdp', () => {
  it('replays what the stub queued before the script loaded, in order', async () => {
    const relay = fakeRelay();
    const w = stub();
    w.cdp!('init', options(relay));
    w.cdp!('identify', ann);
    w.cdp!('track', 'act:cm:one');
    w.cdp!('track', 'act:cm:two');
    const cdp = install(w);
    expect(w.cdp).toBe(cdp);
    await cdp.flush!();
    expect(relay.items().map((i) => (i.type === 'track' ? i.activity_id : i.type))).toEqual(['identify', 'act:cm:one', 'act:cm:two']);
  });

  it('queues method calls made before init and runs them once init comes', async () => {
    const relay = fakeRelay();
    const cdp = install(stub());
    const stored = cdp.identify!(ann);
    const tracked = cdp('track', 'act:cm:early') as Promise<void>;
    cdp('init', options(relay));
    await stored;
    await tracked;
    // Stored means in the queue or already at the relay (init's first flush may have sent them by
    // now): read the queue first, since an entry leaves it only after the relay has taken it.
    const inQueue = (await queued()).map((e) => e.item);
    const atRelay = relay.items();
    const byId = new Map([...atRelay, ...inQueue].map((item) => [item.id, item.type]));
    expect([...byId.values()].sort()).toEqual(['identify', 'track']);
    // Once flushed, the relay has both, once each, the identify first.
    await cdp.flush!();
    expect(relay.items().map((i) => i.type)).toEqual(['identify', 'track']);
    expect(await queued()).toEqual([]);
  });

  it('ignores a second init with a console warning', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const first = fakeRelay();
    const second = fakeRelay();
    const cdp = install(stub());
    cdp('init', options(first));
    cdp('init', options(second));
    expect(warn).toHaveBeenCalledWith('cdp: E10 init');
    await cdp.identify!(ann);
    await cdp.flush!();
    expect(first.items()).toHaveLength(1);
    expect(second.sent).toEqual([]);
  });

  it('loaded twice, the second copy leaves the first in charge', () => {
    const w = stub();
    const cdp = install(w);
    expect(install(w)).toBe(cdp);
    expect(w.cdp).toBe(cdp);
  });

  it('never throws into the page: bad input and unknown commands reject, and unawaited rejections are logged', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const cdp = install(stub());
    cdp('init', options(fakeRelay()));
    let bad: unknown;
    expect(() => (bad = cdp.track!('nope'))).not.toThrow();
    await expect(bad).rejects.toThrow(/E2 nope/);
    await expect(cdp('explode')).rejects.toThrow(/E9 explode/);
    await vi.waitFor(() => expect(warn).toHaveBeenCalledTimes(2), { timeout: 5_000 });
  });

  it('a broken init is logged, not thrown, and a corrected one after it takes effect', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const cdp = install(stub());
    expect(() => cdp('init', {})).not.toThrow();
    expect(error).toHaveBeenCalledWith(expect.objectContaining({ message: expect.stringMatching(/createTracker\(\): E1/) }));
    const relay = fakeRelay();
    cdp('init', options(relay));
    expect(warn).not.toHaveBeenCalled();
    await cdp.identify!(ann);
    await cdp.flush!();
    expect(relay.items()).toHaveLength(1);
  });
});
