/**
 * Stand-ins for four consent platforms, each following its vendor's published API as far as the
 * adapters of `cdp-edge/consent` read it. Self-contained (no imports, no closure over the module)
 * so that end-to-end tests can run it inside a page: `installCmpStubs(window)` there or here.
 *
 * - IAB TCF v2.2: `__tcfapi('addEventListener' | 'removeEventListener', 2, callback, listenerId)`;
 *   each listener is called at once with the current TC data (`cmpuishown` for a visitor who has
 *   not chosen, `tcloaded` for one who has) and again with `useractioncomplete` on each choice.
 * - Google Consent Mode v2: `gtag('consent', 'default' | 'update', {...})` pushing its
 *   `arguments` onto `dataLayer`.
 * - OneTrust: `OnetrustActiveGroups` (",C0001,C0002,"), `OneTrust.IsAlertBoxClosed()` and the
 *   `OneTrustGroupsUpdated` window event whose `detail` is the active group ids.
 * - Cookiebot: `Cookiebot.consent.{necessary,preferences,statistics,marketing}`,
 *   `Cookiebot.hasResponse` and the window events `CookiebotOnConsentReady`, `CookiebotOnAccept`
 *   and `CookiebotOnDecline`.
 */
export interface CmpControls {
  /** TCF: the visitor chooses (purpose ids with consent, vendor ids with consent). */
  tcf(purposes: number[], vendors?: number[]): void;
  /** TCF: how many listeners are registered. */
  tcfListeners(): number;
  /** Consent Mode: a gtag() call. */
  gtag(...args: unknown[]): void;
  /** OneTrust: the visitor saves this choice (active group ids). */
  onetrust(groups: string[]): void;
  /** Cookiebot: the visitor answers (the categories given). */
  cookiebot(categories: string[]): void;
}

export function installCmpStubs(page: Window & typeof globalThis): CmpControls {
  const w = page as unknown as Record<string, unknown>;
  // TCF
  const listeners = new Map<number, (data: unknown, success: boolean) => void>();
  let nextId = 0;
  let tcData: Record<string, unknown> = {
    tcfPolicyVersion: 5,
    gdprApplies: true,
    eventStatus: 'cmpuishown',
    purpose: { consents: {} },
    vendor: { consents: {} },
  };
  w['__tcfapi'] = (command: string, version: number, callback: (data: unknown, success: boolean) => void, parameter?: unknown) => {
    if (version !== 2) return callback(null, false);
    if (command === 'addEventListener') {
      const listenerId = ++nextId;
      listeners.set(listenerId, callback);
      callback({ ...tcData, listenerId }, true);
    } else if (command === 'removeEventListener') callback(listeners.delete(parameter as number), true);
    else callback(null, false);
  };
  // Consent Mode
  w['dataLayer'] ??= [];
  const dataLayer = w['dataLayer'] as unknown[];
  function gtag(..._args: unknown[]) {
    // biome-ignore lint/complexity/noArguments: gtag pushes its `arguments` object, as Google's snippet does
    dataLayer.push(arguments);
  }
  w['gtag'] = gtag;
  // OneTrust
  let closed = false;
  w['OnetrustActiveGroups'] = ',C0001,';
  w['OneTrust'] = { IsAlertBoxClosed: () => closed };
  // Cookiebot
  const cookiebot = { consent: { necessary: true, preferences: false, statistics: false, marketing: false } as Record<string, boolean>, hasResponse: false };
  w['Cookiebot'] = cookiebot;
  page.dispatchEvent(new page.Event('CookiebotOnConsentReady'));

  return {
    tcf(purposes, vendors = []) {
      const consents = (ids: number[]) => Object.fromEntries(ids.map((id) => [String(id), true]));
      tcData = { ...tcData, eventStatus: 'useractioncomplete', purpose: { consents: consents(purposes) }, vendor: { consents: consents(vendors) } };
      for (const [listenerId, listener] of listeners) listener({ ...tcData, listenerId }, true);
    },
    tcfListeners: () => listeners.size,
    gtag,
    onetrust(groups) {
      closed = true;
      w['OnetrustActiveGroups'] = `,${groups.join(',')},`;
      page.dispatchEvent(new page.CustomEvent('OneTrustGroupsUpdated', { detail: groups }));
    },
    cookiebot(categories) {
      for (const category of Object.keys(cookiebot.consent)) cookiebot.consent[category] = category === 'necessary' || categories.includes(category);
      cookiebot.hasResponse = true;
      page.dispatchEvent(new page.Event(categories.length ? 'CookiebotOnAccept' : 'CookiebotOnDecline'));
    },
  };
}
