/**
 * Benchmark: bytes a site pays for cdp-edge beside the analytics SDKs people use today.
 *
 *   npx tsx bench/size.ts            (after `npm run build`, which makes dist/cdp.js and dist/browser.js)
 *
 * For each SDK, two figures, each raw / gzip (level 9) / brotli (quality 11), from node:zlib:
 *  - script: the file the SDK ships for the script-tag (CDN) use, as found in its npm package; a file
 *    the package ships unminified is minified with esbuild first (said in `note`), and Plausible,
 *    whose npm package has no script-tag file, is bundled to a minified IIFE from its ESM entry.
 *  - app:    an ESM "init + one track" app importing the SDK from npm, bundled by esbuild
 *    (minified, browser platform, production), i.e. what an SPA ships.
 * Plus whether the SDK keeps a durable queue (events survive a reload/close before they are sent):
 * read from its source, and the evidence string is checked in the installed package on each run.
 * Prints a table with ratios against cdp-edge and writes bench/results/size.json.
 */
import { build } from 'esbuild';
import { ensurePeerSdks, PEERS_MODULES } from './lib/peer-sdks.js';
import { SNIPPET_GZIP } from './lib/snippet-budget.js';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface Sizes {
  raw: number;
  gzip: number;
  brotli: number;
}

interface Queue {
  durable: boolean;
  storage: string;
  /** a string whose presence in `file` (relative to the package) shows the storage in use */
  evidence: { file: string; contains: string };
  how: string;
}

interface Sdk {
  name: string;
  pkg: string;
  /** the script-tag file inside the package, or `bundle` when the package ships none */
  script: { file: string; minify?: boolean } | { bundle: string };
  app: string;
  queue: Queue;
}

const SDKS: Sdk[] = [
  {
    name: 'cdp-edge',
    pkg: 'cdp-edge',
    script: { file: 'dist/cdp.js' },
    app: `import { createTracker } from 'cdp-edge/browser';
const cdp = createTracker({ relay: 'https://t.example.com', key: 'pk_live_123' });
cdp.track('act:cm:signed-up', { 'str:cm:plan': 'pro' });`,
    queue: {
      durable: true,
      storage: 'IndexedDB (idb-keyval)',
      evidence: { file: 'dist/cdp.js', contains: 'indexedDB' },
      how: 'our own design: every call is written to IndexedDB before its Promise resolves',
    },
  },
  {
    name: 'Segment',
    pkg: '@segment/analytics-next',
    script: { file: 'dist/umd/standalone.js' },
    app: `import { AnalyticsBrowser } from '@segment/analytics-next';
const analytics = AnalyticsBrowser.load({ writeKey: 'wk_123' });
analytics.track('Signed Up', { plan: 'pro' });`,
    queue: {
      durable: true,
      storage: 'localStorage',
      evidence: { file: 'dist/pkg/lib/priority-queue/persisted.js', contains: 'window.localStorage' },
      how: 'PersistedPriorityQueue keeps undelivered events in localStorage (persisted-queue:v1:*) and reloads them',
    },
  },
  {
    name: 'PostHog',
    pkg: 'posthog-js',
    script: { file: 'dist/array.js' },
    app: `import posthog from 'posthog-js';
posthog.init('phc_123', { api_host: 'https://t.example.com' });
posthog.capture('signed up', { plan: 'pro' });`,
    queue: {
      durable: false,
      storage: 'memory (+ sendBeacon on unload)',
      evidence: { file: 'lib/src/retry-queue.js', contains: 'this._queue = [];' },
      how: 'RequestQueue and RetryQueue hold requests in an array; on unload they are beaconed once, never stored',
    },
  },
  {
    name: 'RudderStack',
    pkg: '@rudderstack/analytics-js',
    script: { file: 'dist/npm/modern/umd/index.js', minify: true },
    app: `import { RudderAnalytics } from '@rudderstack/analytics-js';
const rudder = new RudderAnalytics();
rudder.load('wk_123', 'https://dp.example.com');
rudder.track('Signed Up', { plan: 'pro' });`,
    queue: {
      durable: true,
      storage: 'localStorage (XhrQueue plugin, fetched from the CDN at run time by the modern build)',
      evidence: { file: 'dist/npm/modern/bundled/esm/index.mjs', contains: 'globalThis.localStorage' },
      how: 'the XhrQueue plugin’s RetryQueue writes queue/batch entries to the localStorage engine',
    },
  },
  {
    name: 'Snowplow',
    pkg: '@snowplow/browser-tracker',
    script: { file: 'dist/index.umd.min.js' },
    app: `import { newTracker, trackStructEvent } from '@snowplow/browser-tracker';
newTracker('sp', 'https://c.example.com', { appId: 'site' });
trackStructEvent({ category: 'account', action: 'signed-up', label: 'pro' });`,
    queue: {
      durable: true,
      storage: 'localStorage',
      evidence: { file: 'dist/index.umd.min.js', contains: 'snowplowOutQueue_' },
      how: 'the out-queue is mirrored to localStorage (useLocalStorage defaults to true, 1,000 events max)',
    },
  },
  {
    name: 'Mixpanel',
    pkg: 'mixpanel-browser',
    script: { file: 'dist/mixpanel.min.js' },
    app: `import mixpanel from 'mixpanel-browser';
mixpanel.init('tok_123');
mixpanel.track('Signed Up', { plan: 'pro' });`,
    queue: {
      durable: true,
      storage: 'localStorage',
      evidence: { file: 'dist/mixpanel.min.js', contains: '__mpq_' },
      how: 'batch_requests (default on) keeps the request batcher’s queue in localStorage under __mpq_*',
    },
  },
  {
    name: 'Amplitude',
    pkg: '@amplitude/analytics-browser',
    script: { file: 'lib/scripts/amplitude-min.js' },
    app: `import { init, track } from '@amplitude/analytics-browser';
init('key_123');
track('Signed Up', { plan: 'pro' });`,
    queue: {
      durable: true,
      storage: 'localStorage',
      evidence: { file: 'lib/scripts/amplitude-min.js', contains: '_unsent' },
      how: 'the destination plugin saves unsent events through storageProvider (LocalStorage by default) as AMP_unsent_*',
    },
  },
  {
    name: 'Plausible',
    pkg: 'plausible-tracker',
    script: { bundle: 'build/module/index.js' },
    app: `import Plausible from 'plausible-tracker';
const plausible = Plausible({ domain: 'example.com' });
plausible.trackEvent('signup', { props: { plan: 'pro' } });`,
    queue: {
      durable: false,
      storage: 'none (one XMLHttpRequest per event)',
      evidence: { file: 'build/module/lib/request.js', contains: 'XMLHttpRequest' },
      how: 'sendEvent opens one XHR per event and forgets it; there is no queue or retry',
    },
  },
];

const measure = (bytes: Uint8Array): Sizes => ({
  raw: bytes.byteLength,
  gzip: gzipSync(bytes, { level: 9 }).byteLength,
  brotli: brotliCompressSync(bytes, {
    params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength },
  }).byteLength,
});

// every peer is installed in bench/peers; some export maps hide package.json from require.resolve
ensurePeerSdks();
const packageDir = (pkg: string) => (pkg === 'cdp-edge' ? root : join(PEERS_MODULES, pkg));

const version = (pkg: string) => (JSON.parse(readFileSync(join(packageDir(pkg), 'package.json'), 'utf8')) as { version: string }).version;

const ESBUILD = {
  bundle: true,
  // The apps import the peers from bench/peers, and cdp-edge from this package.
  nodePaths: [PEERS_MODULES] as string[],
  minify: true,
  write: false,
  platform: 'browser',
  target: 'es2020',
  logLevel: 'silent',
  define: { 'process.env.NODE_ENV': '"production"' },
  // cdp-edge is measured as a user installs it: the built ESM file the exports map points to
  alias: { 'cdp-edge/browser': join(root, 'dist/browser.js') },
} as const;

async function scriptBytes(sdk: Sdk): Promise<{ file: string; bytes: Uint8Array; note?: string }> {
  const dir = packageDir(sdk.pkg);
  if ('bundle' in sdk.script) {
    const out = await build({ ...ESBUILD, entryPoints: [join(dir, sdk.script.bundle)], format: 'iife', globalName: 'Plausible' });
    return {
      file: sdk.script.bundle,
      bytes: out.outputFiles[0]!.contents,
      note: 'no script-tag file in the npm package: its ESM entry bundled to a minified IIFE by esbuild',
    };
  }
  const path = join(dir, sdk.script.file);
  if (!existsSync(path)) throw new Error(`${sdk.pkg}: ${sdk.script.file} not found (run npm run build for cdp-edge)`);
  if (!sdk.script.minify) return { file: sdk.script.file, bytes: readFileSync(path) };
  const out = await build({ ...ESBUILD, entryPoints: [path], format: 'iife' });
  return { file: sdk.script.file, bytes: out.outputFiles[0]!.contents, note: 'shipped unminified in npm: minified by esbuild as its CDN build would be' };
}

async function appBytes(sdk: Sdk): Promise<Uint8Array> {
  const out = await build({ ...ESBUILD, stdin: { contents: sdk.app, resolveDir: root, loader: 'js' }, format: 'esm' });
  return out.outputFiles[0]!.contents;
}

function queueEvidence(sdk: Sdk): boolean {
  const path = join(packageDir(sdk.pkg), sdk.queue.evidence.file);
  return existsSync(path) && readFileSync(path, 'utf8').includes(sdk.queue.evidence.contains);
}

interface Row {
  name: string;
  pkg: string;
  version: string;
  script: Sizes & { file: string; note?: string };
  app: Sizes;
  queue: Queue & { evidenceFound: boolean };
  error?: string;
}

const rows: Row[] = [];
const failures: string[] = [];
for (const sdk of SDKS) {
  try {
    const script = await scriptBytes(sdk);
    const app = await appBytes(sdk);
    rows.push({
      name: sdk.name,
      pkg: sdk.pkg,
      version: version(sdk.pkg),
      script: { file: script.file, ...(script.note ? { note: script.note } : {}), ...measure(script.bytes) },
      app: measure(app),
      queue: { ...sdk.queue, evidenceFound: queueEvidence(sdk) },
    });
  } catch (error) {
    failures.push(`${sdk.name}: ${(error as Error).message.split('\n')[0]}`);
  }
}

/**
 * cdp-edge's other entries, each as an app bundle that imports it from the built package (esbuild,
 * minified ESM). `adds` is what the entry costs beside `cdp-edge/browser` (its own code and chunks),
 * `app` the whole "one call" bundle of cdp-edge code. The framework entries leave React out (the app
 * has it anyway); `cdp-edge/next` and `cdp-edge/next/server` run in next.config and on the server
 * only: nothing of them reaches the browser. `cdp-edge/server` is bundled for no platform in
 * particular (esbuild's `neutral`), as a Worker or a serverless function ships it.
 */
const ENTRIES: { entry: string; file: string; app: string; platform?: 'neutral'; without?: string }[] = [
  {
    entry: 'cdp-edge/react',
    file: 'dist/react.js',
    without: 'React',
    app: `import { createElement } from 'react';
import { CdpProvider, useTracker } from 'cdp-edge/react';
function Button() {
  const cdp = useTracker();
  return createElement('button', { onClick: () => cdp.track('act:cm:signed-up', { 'str:cm:plan': 'pro' }) }, 'Sign up');
}
export const App = () => createElement(CdpProvider, { relay: '/t', siteKey: 'pk_live_123' }, createElement(Button));`,
  },
  {
    entry: 'cdp-edge/server',
    file: 'dist/server.js',
    platform: 'neutral',
    app: `import { createServerTracker } from 'cdp-edge/server';
const cdp = createServerTracker({ relay: 'https://t.example.com', token: 'rt_example' });
await cdp.track({ id: 'order-1', activity_id: 'act:cm:order-paid', person: { 'str::email': 'ann@example.com' } });`,
  },
];

/** The entries that never reach a browser, bundled for Node as `next.config` or a server loads them (0 B in the browser). */
const SERVER_ENTRIES = [
  { entry: 'cdp-edge/next', file: 'dist/next/index.js', runs: 'next.config' },
  { entry: 'cdp-edge/next/server', file: 'dist/next/server.js', runs: 'the server (Server Components, route handlers)' },
];

async function serverEntrySizes() {
  return Promise.all(
    SERVER_ENTRIES.map(async ({ entry, file, runs }) => {
      const out = await build({ ...ESBUILD, entryPoints: [join(root, file)], format: 'esm', platform: 'node' });
      return { entry, file, runs, browserBytes: 0, bundle: measure(out.outputFiles[0]!.contents) };
    }),
  );
}

async function entrySizes() {
  const external = ['react', 'react/*', 'react-dom', 'react-dom/*'];
  return Promise.all(
    ENTRIES.map(async ({ entry, file, app, platform, without }) => {
      const options = {
        ...ESBUILD,
        ...(platform ? { platform, target: 'es2022' } : {}),
        alias: { ...ESBUILD.alias, [entry]: join(root, file) },
        format: 'esm' as const,
      };
      const own = await build({ ...options, entryPoints: [join(root, file)], external: [...external, './browser.js'] });
      const whole = await build({ ...options, stdin: { contents: app, resolveDir: root, loader: 'js' }, external });
      return { entry, file, ...(without ? { without } : {}), adds: measure(own.outputFiles[0]!.contents), app: measure(whole.outputFiles[0]!.contents) };
    }),
  );
}
const appEntries = await entrySizes();
const serverEntries = await serverEntrySizes();
console.table(appEntries.map(({ entry, adds, app }) => ({ entry, 'adds gzip B': adds.gzip, 'app gzip B (without React)': app.gzip })));
console.table(serverEntries.map(({ entry, runs, bundle }) => ({ entry, runs, 'browser B': 0, 'Node bundle gzip B': bundle.gzip })));
const entries = [...appEntries, ...serverEntries];

/**
 * The consent adapters (`cdp-edge/consent`), which a site adds beside the snippet: each alone as
 * an app that imports and starts it (esbuild, minified ESM: the others tree-shake away), and the
 * script-tag build with all four (dist/cdp-consent.js).
 */
const CONSENT_ADAPTERS = [
  ['TCF v2.2', 'followTcf'],
  ['Google Consent Mode v2', 'followGoogle'],
  ['OneTrust', 'followOneTrust'],
  ['Cookiebot', 'followCookiebot'],
] as const;
async function consentSizes() {
  const alone = await Promise.all(
    CONSENT_ADAPTERS.map(async ([platform, name]) => {
      const app = `import { ${name} } from 'cdp-edge/consent';\n${name}();`;
      const out = await build({
        ...ESBUILD,
        alias: { 'cdp-edge/consent': join(root, 'dist/consent/index.js') },
        stdin: { contents: app, resolveDir: root, loader: 'js' },
        format: 'esm',
      });
      return { platform, import: `import { ${name} } from 'cdp-edge/consent'`, ...measure(out.outputFiles[0]!.contents) };
    }),
  );
  return { adapters: alone, script: { file: 'dist/cdp-consent.js', ...measure(readFileSync(join(root, 'dist/cdp-consent.js'))) } };
}
const consent = await consentSizes();
console.table([
  ...consent.adapters.map(({ platform, gzip }) => ({ adapter: platform, 'gzip B': gzip })),
  { adapter: 'all four (cdp-consent.js)', 'gzip B': consent.script.gzip },
]);
const ours = rows.find((row) => row.name === 'cdp-edge');
const ratio = (value: number, base: number | undefined) => (base ? Math.round((value / base) * 10) / 10 : null);
const kb = (bytes: number) => (bytes / 1024).toFixed(1);

const table = rows.map((row) => ({
  sdk: `${row.name} ${row.version}`,
  'script gzip KB': kb(row.script.gzip),
  'script brotli KB': kb(row.script.brotli),
  'script raw KB': kb(row.script.raw),
  '× cdp (gzip)': ratio(row.script.gzip, ours?.script.gzip),
  'app gzip KB': kb(row.app.gzip),
  '× cdp app': ratio(row.app.gzip, ours?.app.gzip),
  'durable queue': row.queue.durable ? row.queue.storage.split(' ')[0] : 'no',
}));
console.table(table);
for (const row of rows)
  if (!row.queue.evidenceFound)
    console.warn(`! ${row.name}: queue evidence "${row.queue.evidence.contains}" not found in ${row.queue.evidence.file}; recheck the claim`);
for (const failure of failures) console.error(`! ${failure}`);

/** The size test's budget, and the target and aim for dist/cdp.js gzip. */
const BUDGET = { gzip: SNIPPET_GZIP.budget, target: SNIPPET_GZIP.target, aim: SNIPPET_GZIP.aim };

/**
 * dist/cdp.js gzip (node:zlib level 9) before and after each change of the snippet's size, as
 * measured when the change was made (a record, not re-measured here).
 */
const SNIPPET_STEPS = [
  { change: 'before issue 15: hand-golfed source, long error messages', before: 4084, after: 4084 },
  {
    change: 'readable source split by concern; queue index in memory; queue id; events; attribution; UUID from getRandomValues',
    before: 4084,
    after: 5165,
  },
  { change: 'short error codes (E1…E9, text in docs/snippet.md)', before: 5165, after: 5021 },
  { change: 'UUID template fallback, campaign keys as one string, one sendable-items loop', before: 5021, after: 4962 },
  { change: 'cap drops folded into the write transaction', before: 4962, after: 5044 },
  { change: 'terser mangles internal property names; Node-only unref removed', before: 5044, after: 4995 },
  {
    change:
      'queue rows: each write stores one row holding all its entries, writes gather for 10 ms, Store.write(changes) replaces put/del/update (+316 B); ' +
      'terser may mangle listed internal names that DOM objects also use (-38 B); no IndexedDB lease without Web Locks, memory fallback not seeded (-108 B); ' +
      'removals go with the next write, one Promise per write (-85 B)',
    before: 4986,
    after: 5062,
  },
  { change: 'AbortSignal.timeout for the send timeout', before: 5062, after: 5027 },
  { change: 'consent denied drops through the same path as every other drop', before: 5027, after: 5022 },
  {
    change: "item ids are v7 UUIDs (time first): the relay's SQLite store takes them about 7x cheaper than random v4 ids",
    before: 5022,
    after: 5069,
  },
  {
    change:
      "consent 'pending' keeps the queue in memory until a choice, 'store-only' is the old pending (+152 B); paid back: " +
      'no move of rows stored by unpublished snippets before per-key stores, or of one-entry rows (-75 B); the second-init warning is code E10; ' +
      'events, lock, SPA history and first-touch code shorter; the time part of ids is 11 hex digits plus a 0 (valid to 2527)',
    before: 5118,
    after: 5118,
  },
];

/** terser options tried one at a time on the same bundle (gzip bytes), against the build's options. */
const COMPRESS_TRIALS = {
  measured_on_gzip: 5157,
  'compress.passes 1 (build: 3)': 5161,
  'compress.unsafe + unsafe_methods + unsafe_comps': 5148,
  toplevel: 5157,
  'arrows without unsafe_arrows': 5165,
  'mangle.properties of internal names': 5139,
  adopted: 'passes 3, unsafe_arrows, pure_getters, internal property mangling (the others gain < 10 B)',
};

const results = {
  bench: 'size',
  date: new Date().toISOString(),
  compression: { gzip: 'node:zlib level 9', brotli: 'node:zlib quality 11' },
  budget: { 'dist/cdp.js gzip': BUDGET.gzip, target: BUDGET.target, aim: BUDGET.aim },
  withinBudget: ours ? ours.script.gzip <= BUDGET.gzip : null,
  withinTarget: ours ? ours.script.gzip <= BUDGET.target : null,
  snippetSteps: SNIPPET_STEPS,
  compressTrials: COMPRESS_TRIALS,
  rows: rows.map((row) => ({
    ...row,
    ratioToCdpEdge: {
      scriptGzip: ratio(row.script.gzip, ours?.script.gzip),
      scriptBrotli: ratio(row.script.brotli, ours?.script.brotli),
      appGzip: ratio(row.app.gzip, ours?.app.gzip),
    },
  })),
  entries,
  consent,
  failures,
};
mkdirSync(join(root, 'bench/results'), { recursive: true });
writeFileSync(join(root, 'bench/results/size.json'), JSON.stringify(results, null, 2) + '\n');
console.log(`wrote ${relative(process.cwd(), join(root, 'bench/results/size.json'))}`);
if (failures.length > 0) process.exitCode = 1;
