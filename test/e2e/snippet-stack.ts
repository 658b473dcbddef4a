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
import { identityHash, snippetVersion } from '../../src/relay/index.js';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';

export const SITE_KEY = 'pk_e2e';
/** A second site on the same origin whose relay verifies identity (`verify: "required"`): a track naming a person needs its proof. */
export const VERIFIED_SITE_KEY = 'pk_e2e_verified';
const IDENTITY_SECRET = 'e2e-identity-secret-0123456789';
export const PLATFORM_KEY = 'e2e-platform-key';
/** The activity the tests send; its text attribute `n` (`str:cm:n`) numbers each event. */
export const ACTIVITY = 'act:cm:e2e';

export interface PageFlags {
  isolated?: boolean;
  twice?: boolean;
  esm?: boolean;
  script?: string;
  /** load the script from its versioned address, `cdp.js?v=<version>` (immutable: cached for good) */
  versioned?: boolean;
  /** another page of the site (`/page/<name>`), served like `/`: for navigating within the site */
  page?: string;
}

/** First on every page: keeps what went wrong in the page where any driver can read it (WebDriver has no console events). */
const WATCH = `window.__problems=[];addEventListener('error',function(e){__problems.push('error: '+e.message)});addEventListener('unhandledrejection',function(e){__problems.push('unhandled rejection: '+String(e.reason&&e.reason.message||e.reason))});var consoleError=console.error;console.error=function(){__problems.push('console.error: '+[].map.call(arguments,String).join(' '));return consoleError.apply(console,arguments)};`;
const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

export interface Stack {
  emulator: RunningEmulator;
  /** the relay now running (a new one after `startRelay`) */
  readonly relay: RunningRelay;
  /** the relay's log lines (RELAY_LOG=debug: one per request and one per item) */
  relayLog: unknown[];
  /** what the relay answered for each item it was sent, in order (from its per-item log lines) */
  answers(): { id: string; result: string }[];
  /** Stops the relay: the browser's requests to it, `cdp.js` included, are refused. */
  stopRelay(): Promise<void>;
  /** Starts it again on the same address. */
  startRelay(): Promise<void>;
  /** the page origin, e.g. http://127.0.0.1:PORT */
  site: string;
  /**
   * A page with the snippet; `init` is merged into cdp('init', …); `twice` includes the script tag
   * twice; `script` is code run right after the stub's `init` (the ESM page: after createTracker,
   * as module code). Every page records its uncaught errors, unhandled rejections and
   * console.error calls in `window.__problems`.
   */
  pageUrl(init?: Record<string, unknown>, flags?: PageFlags): string;
  /** the `user_hash` the site's server would hand the page for `email` (VERIFIED_SITE_KEY) */
  userHash(email: string): Promise<string>;
  /** the page views the emulator holds for `email`, as paths */
  views(email: string): string[];
  /** the `n` attributes of every e2e event the emulator holds for `email` */
  received(email: string): string[];
  /**
   * Resolves once nothing more can reach the emulator: each of `pages` that runs the snippet has
   * flushed what it still holds (a copy the relay wrongly took again would go now), then the
   * relay's outbox is empty with no call in flight. What the emulator holds then is final, which
   * a fixed wait could only hope for.
   */
  settled(pages: readonly Evaluates[]): Promise<void>;
  close(): Promise<void>;
}

/** A page of any driver, as far as settled() needs it. */
export interface Evaluates {
  evaluate(fn: (arg: undefined) => Promise<void>, arg: undefined): Promise<unknown>;
}

/** In a page: flushes the snippet when it runs there (not the stub, not a page without it). */
export const flushSnippet = async () => {
  const cdp = (window as unknown as { cdp?: { loaded?: boolean; flush?: () => Promise<void> } }).cdp;
  if (cdp?.loaded && typeof cdp.flush === 'function') await cdp.flush();
};

/** `work`'s result, or an error saying `what` once `ms` passed: a stop or start that hangs names itself, not the test's timeout. */
async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} within ${ms / 1000} s`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

/** `env`: relay settings over the stack's own (the snippet bench lets one visitor's 10,000 events in). */
export async function startStack(options: { env?: Record<string, string> } = {}): Promise<Stack> {
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

  // What the README has pages use for the script to load while the relay is down.
  const version = await snippetVersion(new Uint8Array(readFileSync(resolve(process.cwd(), 'dist/cdp.js'))));
  let relayUrl = '';
  const pages = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/browser.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      return void res.end(readFileSync(resolve(process.cwd(), 'dist/browser.js')));
    }
    if (url.pathname === '/esm') return void servePage(res, url, 'module');
    // Somewhere else on the site, to navigate away to.
    if (url.pathname === '/away') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>away</title>away');
    if (url.pathname !== '/' && !url.pathname.startsWith('/page/')) return void res.writeHead(404).end();
    servePage(res, url, 'script');
  });
  const servePage = (res: ServerResponse, url: URL, kind: 'script' | 'module') => {
    const init = { relay: relayUrl, key: SITE_KEY, ...JSON.parse(url.searchParams.get('init') ?? '{}') };
    // The ESM page: an SPA importing dist/browser.js and keeping the tracker on window.cdp.
    const script = url.searchParams.get('script') ?? '';
    const stub =
      kind === 'module'
        ? `import{createTracker}from'/browser.js';window.cdp=Object.assign(createTracker(${JSON.stringify(init)}),{loaded:true});${script}`
        : `window.cdp=window.cdp||function(){(cdp.q=cdp.q||[]).push(arguments)};cdp('init',${JSON.stringify(init)});${script}`;
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      // ?isolated=1: cross-origin isolated, so performance.now() is precise enough for the benchmark.
      ...(url.searchParams.has('isolated') ? { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'credentialless' } : {}),
      // Strict: no eval, no inline script but the stub itself.
      'content-security-policy': `default-src 'none'; script-src ${sha256(WATCH)} ${sha256(stub)} 'self' ${relayUrl}; connect-src ${relayUrl}`,
    });
    const tag = `<script async src="${relayUrl}/cdp.js${url.searchParams.has('versioned') ? `?v=${version}` : ''}"></script>`;
    const scripts = kind === 'module' ? `<script type="module">${stub}</script>` : `<script>${stub}</script>${tag}${url.searchParams.has('twice') ? tag : ''}`;
    res.end(`<!doctype html><html><head><title>e2e</title><script>${WATCH}</script>${scripts}</head><body>e2e</body></html>`);
  };
  const site = await listen(pages);

  const relayLog: unknown[] = [];
  const relayOptions = {
    logger: (entry: unknown) => void relayLog.push(entry),
    env: {
      CDP_API_KEY: PLATFORM_KEY,
      CDP_BASE_URL: emulator.url,
      RELAY_BUDGET_MS: '1500',
      RELAY_LOG: 'debug',
      RELAY_IDENTITY_SECRET: IDENTITY_SECRET,
      RELAY_SITES: JSON.stringify([
        { key: SITE_KEY, origins: [site], verify: 'open', visitor_rate_limit: { per_second: 1000, burst: 1000 } },
        { key: VERIFIED_SITE_KEY, origins: [site], verify: 'required', visitor_rate_limit: { per_second: 1000, burst: 1000 } },
      ]),
      ...options.env,
    },
  };
  let relay: RunningRelay | undefined = await startRelay({ port: 0, ...relayOptions });
  const relayPort = relay.port;
  relayUrl = relay.url;

  /** The value of `attribute` in each `activity` event the emulator holds for `email`. */
  const valuesOf = (email: string, activity: string, attribute: string) => {
    const person = emulator.emulator.snapshot().people.find((p) => p.fields?.['str::email'] === email);
    return (person?.events ?? []).filter((e) => e.activity_id === activity).map((e) => String(e.attributes[attribute]));
  };

  return {
    emulator,
    get relay() {
      if (!relay) throw new Error('the relay is stopped');
      return relay;
    },
    relayLog,
    answers: () =>
      (relayLog as { kind?: string; id?: string; result?: string }[]).flatMap(({ kind, id, result }) =>
        kind === 'item' && id && result ? [{ id, result }] : [],
      ),
    async stopRelay() {
      if (relay) await within(30_000, 'the relay did not stop', relay.close());
      relay = undefined;
    },
    async startRelay() {
      relay ??= await within(30_000, `the relay did not start again on port ${relayPort}`, startRelay({ port: relayPort, ...relayOptions }));
    },
    site,
    pageUrl: (init = {}, flags = {}) =>
      `${site}/${flags.esm ? 'esm' : flags.page ? `page/${encodeURIComponent(flags.page)}` : ''}?init=${encodeURIComponent(JSON.stringify(init))}${flags.isolated ? '&isolated=1' : ''}${flags.twice ? '&twice=1' : ''}${flags.script ? `&script=${encodeURIComponent(flags.script)}` : ''}${flags.versioned ? '&versioned=1' : ''}`,
    userHash: (email) => identityHash(IDENTITY_SECRET, 'str::email', email),
    views: (email) => valuesOf(email, 'act:cm:page-view', 'str:cm:path'),
    received: (email) => valuesOf(email, ACTIVITY, 'str:cm:n'),
    async settled(pages) {
      await Promise.all(pages.map((page) => page.evaluate(flushSnippet, undefined)));
      if (!relay) throw new Error('the relay is stopped');
      await relay.drained({ timeoutMs: 30_000 });
    },
    async close() {
      await new Promise((resolve) => pages.close(resolve));
      pages.closeAllConnections();
      await relay?.close();
      await emulator.close();
    },
  };
}
