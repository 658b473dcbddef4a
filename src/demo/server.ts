/**
 * The demo site's server (what `cdp-edge dev` runs next to the emulator and the relay): the
 * shop page of demo/site with the script tag of the README, the SPA of demo/spa with the ESM
 * build, and `POST /api/user-hash`, which plays the site's own server computing `user_hash`.
 *
 * @example
 * const demo = await startDemoServer({ port: 0, config: () => ({ relay, key: 'pk_demo', identitySecret }) });
 * @module
 */
import { createHash } from 'node:crypto';
import { identityHash } from '../relay/ingest/identity.js';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { getRequestListener } from '@hono/node-server';
import { serveStatic } from '@hono/node-server/serve-static';
import { listen } from '../listen.js';
import { type Context, Hono } from 'hono';
import { CONTENT_TYPES, packageRoot } from './files.js';

/** What the pages need to know; read on every request because the relay starts after the demo. */
export interface DemoConfig {
  /** the relay's base address */
  relay: string;
  /** the site key the relay knows */
  key: string;
  /** `RELAY_IDENTITY_SECRET`, for `user_hash` */
  identitySecret: string;
  /** the emulator's dashboard, linked from the page when there is one */
  dashboard?: string;
}

export interface DemoServerOptions {
  /** @default 8080; 0 picks a free port */
  port?: number;
  /** @default '127.0.0.1' */
  hostname?: string;
  config: () => DemoConfig;
  /** folder holding site/ and spa/ @default the package's demo/ */
  dir?: string;
  /** folder holding browser.js @default the package's dist/ */
  dist?: string;
}

export interface RunningDemo {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** A plausible email: one @, a dot in the domain, no spaces, at most 254 characters. */
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const SAFE = /^[\w.:/[\]-]+$/;
const inlineScripts = (html: string) => [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
// Values go into a JS string inside HTML: JSON quoting plus no way out of the <script>.
const jsString = (value: string) => JSON.stringify(value).replace(/</g, '\\u003c');

/** The demo's routes as a Hono app (a `fetch` handler). */
export function createDemoApp(options: DemoServerOptions): Hono {
  const dir = options.dir ?? join(packageRoot(), 'demo');
  const dist = options.dist ?? join(packageRoot(), 'dist');
  const app = new Hono();

  // Static files through Hono's serveStatic (no way out of the folder, types by extension), never cached.
  const onFound = (_path: string, c: Context) => void c.header('Cache-Control', 'no-store');

  // The page's own inline stub is allowed by its hash; scripts only from here and the relay.
  const page = async (path: string) => {
    const { relay, key } = options.config();
    // Both go into the page as written (the README's script tag): only URL and key characters.
    if (!SAFE.test(relay) || !SAFE.test(key))
      throw new TypeError(`demo: relay ${JSON.stringify(relay)} or key ${JSON.stringify(key)} has characters that do not belong in a script tag`);
    const html = (await readFile(join(dir, path), 'utf8')).replaceAll('%RELAY%', relay).replaceAll('%KEY%', key);
    const csp = [
      "default-src 'self'",
      `script-src 'self' ${inlineScripts(html).map(sha256).join(' ')} ${relay}`,
      `connect-src 'self' ${relay}`,
      "style-src 'self'",
      "img-src 'self' data:",
    ].join('; ');
    return new Response(html, { headers: { 'Content-Type': CONTENT_TYPES['.html']!, 'Content-Security-Policy': csp, 'Cache-Control': 'no-store' } });
  };

  app.get('/', () => page('site/index.html'));
  app.get('/spa', (c) => c.redirect('/spa/'));
  app.get('/config.js', (c) => {
    const { relay, key, dashboard = '' } = options.config();
    return c.body(`export const relay = ${jsString(relay)};\nexport const key = ${jsString(key)};\nexport const dashboard = ${jsString(dashboard)};\n`, 200, {
      'Content-Type': CONTENT_TYPES['.js']!,
      'Cache-Control': 'no-store',
    });
  });
  app.get('/browser.js', serveStatic({ path: join(dist, 'browser.js'), onFound }), (c) => c.text('dist/browser.js is missing: run `npm run build` first', 404));
  app.post('/api/user-hash', async (c) => {
    const body = (await c.req.json().catch(() => undefined)) as { email?: unknown } | undefined;
    const email = typeof body?.email === 'string' ? body.email.trim().toLowerCase() : '';
    if (email.length > 254 || !EMAIL.test(email))
      return c.json({ error: { code: 'invalid_email', message: 'Send {"email": "you@example.com"} with a valid email address.' } }, 400);
    return c.json({ email, user_hash: await identityHash(options.config().identitySecret, 'str::email', email) });
  });
  // The SPA: its files, and its index.html for every client-side route.
  const spaFiles = serveStatic({ root: join(dir, 'spa'), rewriteRequestPath: (path) => path.slice('/spa'.length), onFound });
  app.get('/spa/*', (c, next) => (c.req.path.includes('.') ? spaFiles(c, next) : next()));
  app.get('/spa/*', (c) => (c.req.path.includes('.') ? c.notFound() : page('spa/index.html')));
  app.get('/*', serveStatic({ root: join(dir, 'site'), onFound }));
  return app;
}

/** Serves the demo site on loopback; resolves once it listens. */
export async function startDemoServer(options: DemoServerOptions): Promise<RunningDemo> {
  const app = createDemoApp(options);
  const hostname = options.hostname ?? '127.0.0.1';
  const { url, port, close } = await listen(getRequestListener(app.fetch), options.port ?? 8080, hostname);
  return { url, port, close };
}
