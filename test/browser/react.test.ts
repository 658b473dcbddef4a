/**
 * cdp-edge/react in React 19 under happy-dom, inside <StrictMode> (every effect runs twice on
 * mount, every render twice): one tracker per page, one identify per person, one page view per
 * route, consent changes applied once. The relay is the snippet tests' stand-in (support.ts).
 */
import { act, createElement, type ReactNode, StrictMode, useState } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, describe, expect, it } from 'vitest';
import type { Item, Tracker } from '../../src/browser/index.js';
import { CdpProvider, useIdentify, usePageViews, useTracker } from '../../src/react/index.js';
import { ann, fakeRelay, queued } from './support.js';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const roots: Root[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await act(() => root.unmount());
  history.replaceState(null, '', '/');
});

/** Renders `node` inside <StrictMode> into a fresh root. */
async function render(node: ReactNode): Promise<Root> {
  const root = createRoot(document.body.appendChild(document.createElement('div')));
  roots.push(root);
  await act(() => root.render(createElement(StrictMode, null, node)));
  return root;
}

// Each test has a site key of its own: the page keeps one tracker per relay and key for good.
let sites = 0;
function site(options: Record<string, unknown> = {}) {
  const relay = fakeRelay();
  const props = {
    relay: 'https://t.example.com',
    siteKey: `pk_react_${++sites}`,
    fetch: relay.fetch,
    sendBeacon: false,
    locks: false,
    flushInterval: 3_600_000,
    ...options,
  } as const;
  const seen: Tracker[] = [];
  /** Every item the tracker made: sent to the relay, or still queued (an anonymous visitor's tracks wait for an identify). */
  const items = async (): Promise<Item[]> => [...relay.items(), ...(await queued(props.siteKey)).sort((x, y) => x.n - y.n).map((entry) => entry.item)];
  /** A component that keeps the tracker it was given. */
  const Probe = () => {
    seen.push(useTracker());
    return null;
  };
  return { relay, props, seen, Probe, items };
}

const views = (items: Item[]) =>
  items.flatMap((item) => (item.type === 'track' && item.activity_id === 'act:cm:page-view' ? [item.attributes!['str:cm:path']] : []));
const identifies = (items: Item[]) => items.filter((item) => item.type === 'identify');

describe('cdp-edge/react under <StrictMode>', () => {
  it('makes one tracker for the page: every render, a second provider and a new root after a remount get the same one', async () => {
    const { props, seen, Probe, items } = site({ spa: true });
    const root = await render(createElement(CdpProvider, props, createElement(Probe)));
    await render(createElement(CdpProvider, props, createElement(Probe)));
    await act(() => root.unmount());
    roots.splice(roots.indexOf(root), 1);
    // What fast refresh does to a changed provider module's tree: a new root, rendered again.
    await render(createElement(CdpProvider, props, createElement(Probe)));
    expect(seen.length).toBeGreaterThanOrEqual(6);
    expect(new Set(seen).size).toBe(1);
    // spa: one view on start and one per route change; a second tracker would send each twice.
    await act(() => history.pushState(null, '', '/pricing'));
    await seen[0]!.flush();
    expect(views(await items())).toEqual(['/', '/pricing']);
  });

  it('identifies each person once, resets when they sign out, and carries the proof', async () => {
    const { relay, props, seen, Probe, items } = site();
    let setUser: (user: { email: string; hash: string } | null) => void = () => {};
    const Session = () => {
      const [user, set] = useState<{ email: string; hash: string } | null>({ email: ann['str::email'], hash: 'a'.repeat(64) });
      setUser = set;
      // A new object every render: the hook keys the person by its values.
      useIdentify(user ? { 'str::email': user.email } : null, user?.hash);
      useIdentify(user ? { 'str::email': user.email } : null, user?.hash);
      return null;
    };
    await render(createElement(CdpProvider, props, createElement(Session), createElement(Probe)));
    await act(() => setUser({ email: ann['str::email'], hash: 'a'.repeat(64) }));
    const tracker = seen[0]!;
    await tracker.flush();
    expect(identifies(relay.items())).toEqual([expect.objectContaining({ fields: ann, user_hash: 'a'.repeat(64) })]);

    await act(() => setUser({ email: 'bob@example.com', hash: 'b'.repeat(64) }));
    await act(() => setUser(null));
    await tracker.track('act:cm:after');
    await tracker.flush();
    expect(identifies(relay.items()).map((item) => item.fields)).toEqual([ann, { 'str::email': 'bob@example.com' }]);
    // Signed out: what follows names nobody (so it waits, anonymous, for the next identify).
    const after = (await items()).find((item) => item.type === 'track' && item.activity_id === 'act:cm:after');
    expect(after).toBeDefined();
    expect(after!.type === 'track' && after!.person).toBeFalsy();
  });

  it('sends one page view per route change, back to an earlier route included', async () => {
    const { props, seen, Probe, items } = site();
    let go: (route: string) => void = () => {};
    const Pages = () => {
      const [route, setRoute] = useState('/');
      go = (next) => {
        history.pushState(null, '', next);
        setRoute(next);
      };
      usePageViews(route);
      return null;
    };
    await render(createElement(CdpProvider, props, createElement(Pages), createElement(Probe)));
    await act(() => go('/a'));
    await act(() => go('/b'));
    await act(() => go('/a'));
    await seen[0]!.flush();
    expect(views(await items())).toEqual(['/', '/a', '/b', '/a']);
  });

  it('applies each new consent once: nothing is sent while pending, everything once granted', async () => {
    const { relay, props, seen, Probe } = site({ consent: 'pending' });
    let choose: (consent: 'pending' | 'granted') => void = () => {};
    const App = () => {
      const [consent, setConsent] = useState<'pending' | 'granted'>('pending');
      choose = setConsent;
      return createElement(CdpProvider, { ...props, consent }, createElement(Probe));
    };
    await render(createElement(App));
    const tracker = seen[0]!;
    await tracker.identify(ann);
    await tracker.track('act:cm:before');
    await tracker.flush();
    expect(relay.sent).toEqual([]);
    await act(() => choose('granted'));
    await tracker.flush();
    expect(relay.items().map((item) => item.type)).toEqual(['identify', 'track']);
    // A re-render with the same choice applies nothing again: one consent call, recorded once.
    await act(() => choose('granted'));
    expect(relay.sent).toHaveLength(1);
  });

  it("keeps the visitor's own choice when the provider mounts again with its first consent", async () => {
    const { relay, props, seen, Probe } = site({ consent: 'pending' });
    const root = await render(createElement(CdpProvider, props, createElement(Probe)));
    const tracker = seen[0]!;
    // The banner calls the tracker itself; then the tree mounts again (fast refresh, a route's layout).
    await tracker.consent('granted');
    await act(() => root.unmount());
    roots.splice(roots.indexOf(root), 1);
    await render(createElement(CdpProvider, props, createElement(Probe)));
    await tracker.identify(ann);
    await tracker.flush();
    expect(relay.items().map((item) => item.type)).toEqual(['identify']);
  });
});
