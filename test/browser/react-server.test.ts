// @vitest-environment node
/**
 * cdp-edge/react rendered on the server (SSR, and the client-component pass of React Server
 * Components): no tracker is made there, nothing touches `window`, and a call that would track
 * while rendering rejects with a sentence saying where tracking belongs.
 */
import { createElement } from 'react';
import { renderToString } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { Tracker } from '../../src/browser/index.js';
import { CdpProvider, useIdentify, usePageViews, useTracker } from '../../src/react/index.js';

describe('cdp-edge/react on the server', () => {
  it('renders the provider and hooks without a browser, and its tracker refuses to track', async () => {
    let tracker: Tracker | undefined;
    const Page = () => {
      tracker = useTracker();
      useIdentify({ 'str::email': 'ann@example.com' }, 'a'.repeat(64));
      usePageViews('/');
      return createElement('p', null, 'hello');
    };
    const html = renderToString(createElement(CdpProvider, { relay: '/t', siteKey: 'pk_ssr', spa: true }, createElement(Page)));
    expect(html).toBe('<p>hello</p>');
    expect(typeof window).toBe('undefined');
    await expect(tracker!.track('act:cm:x')).rejects.toThrow(/runs in the browser/);
  });

  it('useTracker() outside a provider says what is missing', () => {
    const Lost = () => {
      useTracker();
      return null;
    };
    expect(() => renderToString(createElement(Lost))).toThrow(/needs a <CdpProvider>/);
  });
});
