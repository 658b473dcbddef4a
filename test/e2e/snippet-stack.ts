/**
 * What the snippet's end-to-end tests run against: the real emulator, the real Node relay
 * in front of it (serving dist/cdp.js), and a page server on another loopback origin whose
 * pages load the snippet with the inline stub of the script tag under a strict CSP.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { startEmulator, type RunningEmulator } from '../../src/emulator/node.js';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';

export const SITE_KEY = 'pk_e2e';
export const PLATFORM_KEY = 'e2e-platform-key';
/** The activity the tests send; its text attribute `n` (`str:cm:n`) numbers each event. */
export const ACTIVITY = 'act:cm:e2e';

export interface Stack {
  emulator: RunningEmulator;
  relay: RunningRelay;
  /** the relay's log lines (one per request) */
  relayLog: unknown[];
  /** the page origin, e.g. http://127.0.0.1:PORT */
  site: string;
  /** a page with the snippet; `init` is merged into cdp('init', …); `twice` includes the script tag twice */
  pageUrl(init?: Record<string, unknown>, flags?: { isolated?: boolean; twice?: boolean; esm?: boolean }): string;
  /** the page views the emulator holds for `email`, as paths */
  views(email: string): string[];
  /** the `n` attributes of every e2e event the emulator holds for `email` */
  received(email: string): string[];
  close(): Promise<void>;
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

export async function startStack(): Promise<Stack> {
  const emulator = await startEmulator({ port: 0, key: PLATFORM_KEY, plan: 'business' });
  const seeded = await fetch(`${emulator.url}/v1/definitions/activity/create`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': PLATFORM_KEY },
    body: JSON.stringify({ name: 'e2e', attributes: [{ name: 'n', display_type: 'text' }] }),
  });
  if (!seeded.ok) throw new Error(`seeding ${ACTIVITY}: ${seeded.status} ${await seeded.text()}`);
  const views = await fetch(`${emulator.url}/v1/definitions/activity/create`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': PLATFORM_KEY },
    body: JSON.stringify({ name: 'page-view', attributes: ['url', 'path', 'title', 'referrer'].map((name) => ({ name, display_type: 'text' })) }),
  });
  if (!views.ok) throw new Error(`seeding act:cm:page-view: ${views.status} ${await views.text()}`);

  let relayUrl = '';
  const pages = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/browser.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      return void res.end(readFileSync(resolve(process.cwd(), 'dist/browser.js')));
    }
    if (url.pathname === '/esm') return void servePage(res, url, 'module');
    if (url.pathname !== '/') return void res.writeHead(404).end();
    servePage(res, url, 'script');
  });
  const servePage = (res: ServerResponse, url: URL, kind: 'script' | 'module') => {
    const init = { relay: relayUrl, key: SITE_KEY, ...JSON.parse(url.searchParams.get('init') ?? '{}') };
    // The ESM page: an SPA importing dist/browser.js and keeping the tracker on window.cdp.
    const stub =
      kind === 'module'
        ? `import{createTracker}from'/browser.js';window.cdp=Object.assign(createTracker(${JSON.stringify(init)}),{loaded:true});`
        : `window.cdp=window.cdp||function(){(cdp.q=cdp.q||[]).push(arguments)};cdp('init',${JSON.stringify(init)});`;
    const hash = createHash('sha256').update(stub).digest('base64');
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      // ?isolated=1: cross-origin isolated, so performance.now() is precise enough for the benchmark.
      ...(url.searchParams.has('isolated') ? { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'credentialless' } : {}),
      // Strict: no eval, no inline script but the stub itself.
      'content-security-policy': `default-src 'none'; script-src 'sha256-${hash}' 'self' ${relayUrl}; connect-src ${relayUrl}`,
    });
    const tag = `<script async src="${relayUrl}/cdp.js"></script>`;
    const scripts = kind === 'module' ? `<script type="module">${stub}</script>` : `<script>${stub}</script>${tag}${url.searchParams.has('twice') ? tag : ''}`;
    res.end(`<!doctype html><html><head><title>e2e</title>${scripts}</head><body>e2e</body></html>`);
  };
  const site = await listen(pages);

  const relayLog: unknown[] = [];
  const relay = await startRelay({
    port: 0,
    logger: (entry) => void relayLog.push(entry),
    env: {
      CDP_API_KEY: PLATFORM_KEY,
      CDP_BASE_URL: emulator.url,
      RELAY_BUDGET_MS: '1500',
      RELAY_SITES: JSON.stringify([{ key: SITE_KEY, origins: [site], visitor_rate_limit: { per_second: 1000, burst: 1000 } }]),
    },
  });
  relayUrl = relay.url;

  /** The value of `attribute` in each `activity` event the emulator holds for `email`. */
  const valuesOf = (email: string, activity: string, attribute: string) => {
    const person = emulator.emulator.snapshot().people.find((p) => p.fields?.['str::email'] === email);
    return (person?.events ?? []).filter((e) => e.activity_id === activity).map((e) => String(e.attributes[attribute]));
  };

  return {
    emulator,
    relay,
    relayLog,
    site,
    pageUrl: (init = {}, flags = {}) =>
      `${site}/${flags.esm ? 'esm' : ''}?init=${encodeURIComponent(JSON.stringify(init))}${flags.isolated ? '&isolated=1' : ''}${flags.twice ? '&twice=1' : ''}`,
    views: (email) => valuesOf(email, 'act:cm:page-view', 'str:cm:path'),
    received: (email) => valuesOf(email, ACTIVITY, 'str:cm:n'),
    async close() {
      await new Promise((resolve) => pages.close(resolve));
      pages.closeAllConnections();
      await relay.close();
      await emulator.close();
    },
  };
}
