/**
 * Benchmark: what one `track()` costs the page's main thread, cdp-edge beside the peer SDKs, in
 * real Chromium (target for cdp-edge: ≤ 20 µs median).
 *
 *   npm run build && npx tsx bench/peers.ts [--calls 10000]
 *
 * Each SDK's "init + track" app, bundled from npm by esbuild (minified IIFE, browser platform),
 * is initialised against a local sink on loopback that answers 200 `{}` to everything (settings,
 * batches, beacons). The page is cross-origin isolated so performance.now() is precise to 5 µs.
 * After a 1 s settle, `calls` track calls are timed one by one (the synchronous part: what the
 * page's task pays) and in blocks of 100 (mean per call, finer than the timer). Also the
 * script's resource timing on a cold page. Prints a table, writes bench/results/peers.json.
 */
import { build } from 'esbuild';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { BrowserContext } from 'playwright-core';
import { CHROMIUM_PATH, launchChromium } from '../test/e2e/chromium.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { calls: { type: 'string', default: '10000' } } });
const CALLS = Number(values.calls);
/** per SDK: load, settle and 2 × CALLS calls */
const SDK_SECONDS = 30;

/** `SINK` is replaced by the sink's address; each app sets `window.__track(i)`. */
const APPS: Record<string, string> = {
  'cdp-edge': `import { createTracker } from 'cdp-edge/browser';
const cdp = createTracker({ relay: SINK, key: 'pk_bench', flushInterval: 3600000 });
window.__track = (i) => cdp.track('act:cm:bench', { 'str:cm:n': String(i) });`,
  Segment: `import { AnalyticsBrowser } from '@segment/analytics-next';
const analytics = AnalyticsBrowser.load({ writeKey: 'wk_bench', cdnURL: SINK }, { integrations: { 'Segment.io': { apiHost: SINK.replace(/^https?:\\/\\//, '') + '/v1', protocol: 'http' } } });
window.__track = (i) => analytics.track('Bench', { n: i });`,
  PostHog: `import posthog from 'posthog-js';
posthog.init('phc_bench', { api_host: SINK, autocapture: false, capture_pageview: false, disable_session_recording: true, advanced_disable_flags: true });
window.__track = (i) => posthog.capture('bench', { n: i });`,
  RudderStack: `import { RudderAnalytics } from '@rudderstack/analytics-js';
const rudder = new RudderAnalytics();
rudder.load('wk_bench', SINK, { configUrl: SINK, pluginsSDKBaseURL: SINK, destSDKBaseURL: SINK });
window.__track = (i) => rudder.track('Bench', { n: i });`,
  Snowplow: `import { newTracker, trackStructEvent } from '@snowplow/browser-tracker';
newTracker('sp', SINK, { appId: 'bench' });
window.__track = (i) => trackStructEvent({ category: 'bench', action: 'track', value: i });`,
  Mixpanel: `import mixpanel from 'mixpanel-browser';
mixpanel.init('tok_bench', { api_host: SINK });
window.__track = (i) => mixpanel.track('Bench', { n: i });`,
  Amplitude: `import { init, track } from '@amplitude/analytics-browser';
init('key_bench', { serverUrl: SINK + '/2/httpapi', autocapture: false });
window.__track = (i) => track('Bench', { n: i });`,
  Plausible: `import Plausible from 'plausible-tracker';
const plausible = Plausible({ domain: 'bench.example.com', apiHost: SINK });
window.__track = (i) => plausible.trackEvent('bench', { props: { n: String(i) } });`,
};

async function bundle(source: string): Promise<Uint8Array> {
  const out = await build({
    stdin: { contents: source, resolveDir: root, loader: 'js' },
    bundle: true,
    minify: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
    alias: { 'cdp-edge/browser': join(root, 'dist/browser.js') },
  });
  return out.outputFiles[0]!.contents;
}

/**
 * Runs in the page. A string, not a function: tsx would wrap named helpers in `__name(…)`, which
 * the page does not have.
 */
const MEASURE = `function (calls) {
  const each = [];
  const settle = (result) => { if (result && typeof result.catch === 'function') result.catch(() => {}); };
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    const result = window.__track(i);
    each.push(performance.now() - t0);
    settle(result);
  }
  const blocks = [];
  for (let b = 0; b < calls / 100; b++) {
    const t0 = performance.now();
    for (let i = 0; i < 100; i++) settle(window.__track(calls + b * 100 + i));
    blocks.push((performance.now() - t0) / 100);
  }
  const at = (list, p) => list.slice().sort((a, b) => a - b)[Math.min(list.length - 1, Math.floor((list.length * p) / 100))] * 1000;
  const script = performance.getEntriesByType('resource').find((e) => e.name.includes('/app.js'));
  return { isolated: crossOriginIsolated, median_us: at(each, 50), p99_us: at(each, 99), block_mean_median_us: at(blocks, 50), block_mean_p99_us: at(blocks, 99), script_ms: script ? script.responseEnd - script.startTime : -1, script_bytes: script ? script.decodedBodySize : -1 };
}`;

const scripts = new Map<string, Uint8Array>();
let sinkHits = 0;
const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  const isolation = {
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-embedder-policy': 'require-corp',
    'cross-origin-resource-policy': 'same-origin',
  };
  if (url.pathname === '/page') {
    const name = url.searchParams.get('sdk') ?? '';
    return void res
      .writeHead(200, { 'content-type': 'text/html', ...isolation })
      .end(`<!doctype html><title>${name}</title><script src="/app.js?sdk=${encodeURIComponent(name)}"></script>`);
  }
  if (url.pathname === '/app.js') {
    const script = scripts.get(url.searchParams.get('sdk') ?? '');
    return void res.writeHead(script ? 200 : 404, { 'content-type': 'text/javascript', 'cache-control': 'no-store', ...isolation }).end(script);
  }
  // The sink: every SDK call, settings fetch or batch gets an empty success.
  sinkHits++;
  req.resume();
  res.writeHead(200, { 'content-type': 'application/json', 'access-control-allow-origin': '*', ...isolation }).end('{}');
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

interface Row {
  sdk: string;
  ok: boolean;
  error?: string;
  median_us?: number;
  p99_us?: number;
  block_mean_median_us?: number;
  block_mean_p99_us?: number;
  script_ms?: number;
  script_bytes?: number;
  seconds?: number;
}

const browser = await launchChromium();
const rows: Row[] = [];
try {
  for (const [sdk, app] of Object.entries(APPS)) {
    const t0 = Date.now();
    let context: BrowserContext | undefined;
    try {
      scripts.set(sdk, await bundle(app.replaceAll('SINK', JSON.stringify(base))));
      context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${base}/page?sdk=${encodeURIComponent(sdk)}`);
      await page.waitForFunction(() => typeof (window as unknown as { __track?: unknown }).__track === 'function', undefined, { timeout: 10_000 });
      await page.waitForTimeout(1000);
      // Bounded: an SDK that blocks for long (or takes the tab down) is reported, not waited for.
      const deadline = new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`did not finish ${CALLS * 2} calls within ${SDK_SECONDS} s`)), SDK_SECONDS * 1000).unref(),
      );
      const figures = (await Promise.race([page.evaluate(`(${MEASURE})(${CALLS})`), deadline]).finally(() => context?.close().catch(() => {}))) as Record<
        string,
        number | boolean
      >;
      const round = (key: string) => Math.round((figures[key] as number) * 10) / 10;
      rows.push({
        sdk,
        ok: true,
        median_us: round('median_us'),
        p99_us: round('p99_us'),
        block_mean_median_us: round('block_mean_median_us'),
        block_mean_p99_us: round('block_mean_p99_us'),
        script_ms: round('script_ms'),
        script_bytes: figures['script_bytes'] as number,
        seconds: Math.round((Date.now() - t0) / 100) / 10,
      });
      if (!figures['isolated']) console.warn(`! ${sdk}: page not cross-origin isolated; per-call times are 100 µs coarse`);
    } catch (error) {
      rows.push({ sdk, ok: false, error: (error as Error).message.split('\n')[0]!, seconds: Math.round((Date.now() - t0) / 100) / 10 });
      await context?.close().catch(() => {});
    }
  }
} finally {
  await browser.close();
  server.close();
  server.closeAllConnections();
}

const ours = rows.find((r) => r.sdk === 'cdp-edge');
const report = {
  benchmark: 'peers',
  date: new Date().toISOString(),
  chromium: `${browser.version()} (${CHROMIUM_PATH})`,
  calls: CALLS,
  what: 'main-thread time of track() per call (5 µs timer, cross-origin isolated page) and mean per call over blocks of 100, for an esbuild IIFE of each SDK\'s "init + track" app against a local sink answering 200 {}',
  target_median_us: 20,
  sink_requests: sinkHits,
  rows: rows.map((r) => ({
    ...r,
    ratio_block_mean_to_cdp_edge: r.ok && ours?.block_mean_median_us ? Math.round((r.block_mean_median_us! / ours.block_mean_median_us) * 10) / 10 : null,
  })),
};
mkdirSync(join(root, 'bench/results'), { recursive: true });
writeFileSync(join(root, 'bench/results/peers.json'), `${JSON.stringify(report, null, 2)}\n`);
console.table(
  report.rows.map((r) => ({
    sdk: r.sdk,
    'median µs': r.median_us,
    'p99 µs': r.p99_us,
    'mean/call µs (blocks)': r.block_mean_median_us,
    '× cdp-edge': r.ratio_block_mean_to_cdp_edge,
    'script ms': r.script_ms,
    s: r.seconds,
    error: r.error ?? '',
  })),
);
console.log('wrote bench/results/peers.json');
if (!ours?.ok) process.exitCode = 1;
