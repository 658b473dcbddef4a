/**
 * WebKitGTK (Safari's engine) through classic WebDriver: Debian's WebKitWebDriver drives the GTK
 * MiniBrowser, which needs an X display, so each launch starts its own Xvfb on a free display
 * (`-displayfd`) and WebKitWebDriver on a free port. The client is `webdriver` (WebdriverIO's
 * protocol package), forced to classic WebDriver: WebKitWebDriver speaks no BiDi. Each page is a
 * session of its own, so a new MiniBrowser with an empty, ephemeral profile; the session launch()
 * opens to read the version becomes the first page.
 *
 * WebKitWebDriver can stop answering a command altogether (WebKit's own WebDriver test runner
 * guards against the same: a command whose reply never comes). Its own page-load and script
 * timeouts are 30 s; a command it has not answered {@link STALL_MS} after it was sent fails with
 * {@link DRIVER_STALLED} in its message, the driver and its display are killed, and the next page
 * starts new ones. The e2e project retries a test once on that message only (vitest.config.ts):
 * a page, relay or emulator that misbehaves still fails the test.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Engine, EnginePage } from './types.js';

export const WEBKIT_DRIVER_PATH = process.env['CDP_EDGE_WEBKIT_DRIVER'] ?? '/usr/bin/WebKitWebDriver';
export const XVFB_PATH = '/usr/bin/Xvfb';
/** What a command's error says when WebKitWebDriver did not answer it: the e2e project retries a test on it. */
export const DRIVER_STALLED = 'WebKitWebDriver stopped answering';
/** The driver's own page-load and script timeouts. */
const DRIVER_TIMEOUT_MS = 30_000;
/** How long a command may go unanswered before the driver counts as stalled. */
const STALL_MS = DRIVER_TIMEOUT_MS + 10_000;

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
  // A process group of its own, with the MiniBrowsers it starts: a stalled driver is killed with them.
  const driver = spawn(WEBKIT_DRIVER_PATH, [`--port=${port}`], { env: { ...process.env, DISPLAY: display }, stdio: 'ignore', detached: true });
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

/** A driver and the display it runs on. */
interface Driver {
  port: number;
  /** Ends the driver, the browsers it started and its display. */
  kill(signal: 'SIGTERM' | 'SIGKILL'): void;
}

async function startDisplayAndDriver(): Promise<Driver> {
  const xvfb = await startXvfb();
  const driver = await startDriver(xvfb.display).catch((error) => {
    xvfb.process.kill();
    throw error;
  });
  return {
    port: driver.port,
    kill: (signal) => {
      try {
        if (driver.process.pid !== undefined) process.kill(-driver.process.pid, signal);
      } catch {
        // already gone
      }
      xvfb.process.kill();
    },
  };
}

export async function launch(): Promise<Engine> {
  const binary = miniBrowserPath();
  if (!binary) throw new Error('no MiniBrowser (install the Debian package webkit2gtk-driver)');
  // WebdriverIO's loggers take their level from the environment when first loaded: quiet, unless asked.
  process.env['WDIO_LOG_LEVEL'] ??= 'warn';
  const { default: WebDriver } = await import('webdriver');
  let driver: Driver | undefined = await startDisplayAndDriver();
  const newSession = async () => {
    driver ??= await startDisplayAndDriver();
    return WebDriver.newSession({
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
  };
  /** `command`'s answer, or DRIVER_STALLED once it went unanswered for STALL_MS (the driver is then killed). */
  const answered = async <T>(what: string, command: Promise<T>): Promise<T> => {
    const stalled = driver;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (stalled !== undefined && driver === stalled) {
          driver = undefined;
          spare = undefined;
          stalled.kill('SIGKILL');
        }
        console.error(`${DRIVER_STALLED}: ${what} had no answer after ${STALL_MS / 1000} s; the next page starts a new driver`);
        reject(new Error(`${DRIVER_STALLED}: ${what} had no answer after ${STALL_MS / 1000} s`));
      }, STALL_MS);
    });
    command.catch(() => {});
    try {
      return await Promise.race([command, deadline]);
    } finally {
      clearTimeout(timer);
    }
  };
  // The version as the driver reports it, from a first session: unused, it is the first page's
  // (a MiniBrowser start is the costly part of a page).
  let spare: Awaited<ReturnType<typeof newSession>> | undefined = await newSession();
  const version = `webkitgtk/${(spare.capabilities as { browserVersion?: string }).browserVersion ?? 'unknown'}`;
  return {
    name: 'webkit',
    version,
    async newPage(): Promise<EnginePage> {
      const client = spare ?? (await answered('a new session', newSession()));
      spare = undefined;
      const session = driver;
      await answered('setTimeouts', client.setTimeouts(undefined, DRIVER_TIMEOUT_MS, DRIVER_TIMEOUT_MS));
      return {
        goto: (url) => answered(`navigateTo ${url}`, client.navigateTo(url) as Promise<void>),
        reload: () => answered('refresh', client.refresh() as Promise<void>),
        async evaluate(fn, arg) {
          const script = asyncScript(fn.toString());
          const answer = (await answered(`executeAsyncScript ${fn.toString().slice(0, 80)}`, client.executeAsyncScript(script, [arg as object]))) as {
            value?: never;
            error?: string;
          };
          if (answer?.error !== undefined) throw new Error(`in the page: ${answer.error}`);
          return answer?.value as never;
        },
        // A session of a driver that stalled went with it.
        close: async () => {
          if (session === driver) await answered('deleteSession', client.deleteSession() as Promise<void>);
        },
      };
    },
    async close() {
      await spare?.deleteSession().catch(() => {});
      driver?.kill('SIGTERM');
    },
  };
}
