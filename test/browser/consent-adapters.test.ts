// The consent adapters against stand-ins that follow each platform's published API
// (test/support/cmp-stubs.ts): which state each choice becomes, that each is told once, that a
// withdrawal is told, and that stopping removes the listener. The same stubs drive the adapters
// in three browsers in test/e2e/consent-engines.test.ts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ConsentState, followCookiebot, followGoogle, followOneTrust, followTcf, type Unfollow } from '../../src/consent/index.js';
import { type CmpControls, installCmpStubs } from '../support/cmp-stubs.js';
import { ann, queued, siteRows, tracker } from './support.js';

let cmp: CmpControls;
let told: ConsentState[];
let stop: Unfollow | undefined;
const target = { consent: (state: ConsentState) => void told.push(state) };

beforeEach(() => {
  cmp = installCmpStubs(window as never);
  told = [];
});

afterEach(() => {
  stop?.();
  stop = undefined;
  for (const name of ['__tcfapi', 'dataLayer', 'gtag', 'OnetrustActiveGroups', 'OneTrust', 'Cookiebot', 'cdp'])
    delete (window as unknown as Record<string, unknown>)[name];
});

describe('TCF v2.2', () => {
  it("storage needs purpose 1, sending the site's purposes and vendor; nothing before the choice", () => {
    stop = followTcf({ target, purposes: [8, 9], vendor: 42 });
    expect(told).toEqual([]);
    cmp.tcf([1]);
    cmp.tcf([1, 8, 9], [42]);
    cmp.tcf([1, 8, 9], [42]);
    cmp.tcf([1, 8, 9]);
    cmp.tcf([8, 9], [42]);
    expect(told).toEqual(['store-only', 'granted', 'store-only', 'denied']);
  });

  it('waits for __tcfapi to appear, and stopping removes its listener', async () => {
    const api = (window as unknown as Record<string, unknown>)['__tcfapi'];
    delete (window as unknown as Record<string, unknown>)['__tcfapi'];
    stop = followTcf({ target });
    await new Promise((r) => setTimeout(r, 120));
    (window as unknown as Record<string, unknown>)['__tcfapi'] = api;
    await expect.poll(() => cmp.tcfListeners()).toBe(1);
    cmp.tcf([1, 9]);
    expect(told).toEqual(['granted']);
    stop();
    expect(cmp.tcfListeners()).toBe(0);
  });
});

describe('Google Consent Mode v2', () => {
  it('a default that denies is no choice; updates are followed; calls made before it started count', () => {
    cmp.gtag('consent', 'default', { analytics_storage: 'denied', ad_user_data: 'denied' });
    stop = followGoogle({ target });
    expect(told).toEqual([]);
    cmp.gtag('event', 'page_view');
    cmp.gtag('consent', 'update', { analytics_storage: 'granted' });
    cmp.gtag('consent', 'update', { ad_user_data: 'granted' });
    cmp.gtag('consent', 'update', { analytics_storage: 'denied' });
    expect(told).toEqual(['store-only', 'granted', 'denied']);
  });

  it("a default that grants is the site's rule and counts", () => {
    stop = followGoogle({ target });
    cmp.gtag('consent', 'default', { analytics_storage: 'granted', ad_user_data: 'granted' });
    expect(told).toEqual(['granted']);
  });
});

describe('OneTrust', () => {
  it("follows the site's category: active is granted, inactive once the banner closed is denied", () => {
    stop = followOneTrust({ target, category: 'C0004' });
    expect(told).toEqual([]);
    cmp.onetrust(['C0001', 'C0002']);
    cmp.onetrust(['C0001', 'C0002', 'C0004']);
    cmp.onetrust(['C0001']);
    expect(told).toEqual(['denied', 'granted', 'denied']);
    stop();
    cmp.onetrust(['C0001', 'C0004']);
    expect(told).toHaveLength(3);
  });
});

describe('Cookiebot', () => {
  it("follows the site's category: given is granted, refused once answered is denied", () => {
    stop = followCookiebot({ target, category: 'marketing' });
    expect(told).toEqual([]);
    cmp.cookiebot(['statistics']);
    cmp.cookiebot(['statistics', 'marketing']);
    cmp.cookiebot([]);
    expect(told).toEqual(['denied', 'granted', 'denied']);
  });
});

describe('with the tracker', () => {
  it('tells window.cdp by default: under pending nothing is stored before the choice, a grant sends it all once', async () => {
    const { t, relay } = await tracker({ consent: 'pending' });
    (window as unknown as { cdp: unknown }).cdp = (command: string, state: ConsentState) => command === 'consent' && t.consent(state);
    stop = followOneTrust();
    await t.identify(ann);
    await t.track('act:cm:viewed');
    expect(await siteRows()).toEqual([]);
    cmp.onetrust(['C0001', 'C0002']);
    await expect
      .poll(async () => {
        await t.flush();
        return relay.items().map((i) => i.type);
      })
      .toEqual(['identify', 'track']);
    expect(await queued()).toEqual([]);
  });
});
