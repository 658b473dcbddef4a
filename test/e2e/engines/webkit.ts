/**
 * WebKitGTK (Safari's engine) through classic WebDriver: Debian's WebKitWebDriver drives the GTK
 * MiniBrowser, which needs an X display, so each launch starts its own Xvfb on a free display
 * (`-displayfd`) and WebKitWebDriver on a free port. The client is `webdriver` (WebdriverIO's
 * protocol package), forced to classic WebDriver: WebKitWebDriver speaks no BiDi. Each page is a
 * session of its own, so a new MiniBrowser with an empty, ephemeral profile; the session launch()
 * opens to read the version becomes the first page.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Engine, EnginePage } from './types.js';

export const WEBKIT_DRIVER_PATH = process.env['CDP_EDGE_WEBKIT_DRIVER'] ?? '/usr/bin/WebKitWebDriver';
export const XVFB_PATH = '/usr/bin/Xvfb';

/** MiniBrowser ships with libwebkit2gtk under an arch-specific directory; `CDP_EDGE_MINIBROWSER` overrides. */
export function miniBrowserPath(): string | undefined {
  const override = process.env['CDP_EDGE_MINIBROWSER'];
  if (override) return existsSync(override) ? override : undefined;
  for (const lib of ['/usr/lib', '/usr/libexec']) {
    const dirs = existsSync(lib) ? readdirSync(lib).map((d) => `${lib}/${d}`) : [];
    for (const dir of [lib, ...dirs]) {
      for (const api of ['webkit2gtk-4.1', 'webkitgtk-6.0', 'webkit2gtk-4.0']) {
        const candidate = `${dir}/${api}/MiniBrowser`;
        if (existsSync(candidate)) return candidate;
      }
    }
  }
  return undefined;
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

/** Starts Xvfb on the first free display and resolves with it, e.g. `:3`. */
function startXvfb(): Promise<{ display: string; process: ChildProcess }> {
  const xvfb = spawn(XVFB_PATH, ['-displayfd', '3', '-nolisten', 'tcp', '-screen', '0', '1280x1024x24'], { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
  let stderr = '';
  xvfb.stderr?.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    let out = '';
    (xvfb.stdio[3] as NodeJS.ReadableStream).on('data', (chunk) => {
      out += chunk;
      if (out.includes('\n')) resolve({ display: `:${out.trim()}`, process: xvfb });
    });
    xvfb.once('exit', (code) => reject(new Error(`Xvfb exited (${code}) before it had a display: ${stderr.trim()}`)));
    xvfb.once('error', reject);
  });
}

async function startDriver(display: string): Promise<{ port: number; process: ChildProcess }> {
  const port = await freePort();
  const driver = spawn(WEBKIT_DRIVER_PATH, [`--port=${port}`], { env: { ...process.env, DISPLAY: display }, stdio: 'ignore' });
  const exited = new Promise<never>((_, reject) => driver.once('exit', (code) => reject(new Error(`WebKitWebDriver exited (${code}) on port ${port}`))));
  exited.catch(() => {});
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
    const ready = await Promise.race([
      fetch(`http://127.0.0.1:${port}/status`).then(
        (r) => r.ok,
        () => false,
      ),
      exited,
    ]);
    if (ready) return { port, process: driver };
    await new Promise((r) => setTimeout(r, 100));
  }
  driver.kill();
  throw new Error(`WebKitWebDriver did not answer on port ${port} within 10 s`);
}

/** Wraps `fn` for executeAsyncScript: its result, or its error as text (WebDriver would lose the message). */
const asyncScript = (fn: string) => `const arg = arguments[0], done = arguments[arguments.length - 1];
Promise.resolve().then(() => (${fn})(arg)).then((value) => done({ value }), (error) => done({ error: String((error && error.stack) || error) }));`;

export async function launch(): Promise<Engine> {
  const binary = miniBrowserPath();
  if (!binary) throw new Error('no MiniBrowser (install the Debian package webkit2gtk-driver)');
  // WebdriverIO's loggers take their level from the environment when first loaded: quiet, unless asked.
  process.env['WDIO_LOG_LEVEL'] ??= 'warn';
  const { default: WebDriver } = await import('webdriver');
  const xvfb = await startXvfb();
  const driver = await startDriver(xvfb.display).catch((error) => {
    xvfb.process.kill();
    throw error;
  });
  const newSession = () =>
    WebDriver.newSession({
      hostname: '127.0.0.1',
      port: driver.port,
      path: '/',
      logLevel: 'error',
      connectionRetryCount: 0,
      capabilities: {
        browserName: 'MiniBrowser',
        // WebdriverIO asks for BiDi (webSocketUrl) unless told not to; WebKitWebDriver then matches no capabilities.
        'wdio:enforceWebDriverClassic': true,
        'webkitgtk:browserOptions': { binary, args: ['--automation'] },
      } as WebdriverIO.Capabilities,
    });
  // The version as the driver reports it, from a first session: unused, it is the first page's
  // (a MiniBrowser start is the costly part of a page).
  let spare: Awaited<ReturnType<typeof newSession>> | undefined = await newSession();
  const version = `webkitgtk/${(spare.capabilities as { browserVersion?: string }).browserVersion ?? 'unknown'}`;
  return {
    name: 'webkit',
    version,
    async newPage(): Promise<EnginePage> {
      const client = spare ?? (await newSession());
      spare = undefined;
      await client.setTimeouts(undefined, 60_000, 60_000);
      return {
        goto: (url) => client.navigateTo(url) as Promise<void>,
        reload: () => client.refresh() as Promise<void>,
        async evaluate(fn, arg) {
          const answer = (await client.executeAsyncScript(asyncScript(fn.toString()), [arg as object])) as { value?: never; error?: string };
          if (answer?.error !== undefined) throw new Error(`in the page: ${answer.error}`);
          return answer?.value as never;
        },
        close: () => client.deleteSession() as Promise<void>,
      };
    },
    async close() {
      await spare?.deleteSession().catch(() => {});
      driver.process.kill();
      xvfb.process.kill();
    },
  };
}
