/**
 * `cdp-edge dev` (what `npm start` runs): the emulator with the demo's seed, the relay in front
 * of it and the demo site, on loopback, with no key and no internet; Ctrl-C stops all three.
 * With `--upstream URL` (or `CDP_API_KEY` in the environment) the relay forwards to the real
 * platform instead, and says so.
 * @module
 */
import { parseArgs } from 'node:util';
import { baseUrlFor, isRegion } from '../api/index.js';
import type { Command } from './command.js';
import type { LogLine } from '../relay/core/logging.js';
import { PortTakenError, type PortChoice } from '../demo/ports.js';
import type { DevStack, Upstream } from '../demo/stack.js';

const USAGE = `Usage: cdp-edge dev [options]      (npm start runs this after building)

Starts on loopback: the emulator (the platform API with a little demo data), the relay
pointed at it, and the demo site. Prints their addresses; Ctrl-C stops all three.

  --demo-port N       the demo site (default 8080)
  --relay-port N      the relay (default 8787)
  --emulator-port N   the emulator (default 8790)
                      a default port that is taken moves to the next free one; a port
                      given here must be free; 0 picks any free port
  --data FILE         keep the emulator's state in FILE across runs
  --upstream URL      forward to the real platform at URL instead of the emulator
                      (needs CDP_API_KEY in the environment)
  --quiet             no line per relay request
  -h, --help          this text

Environment: CDP_API_KEY (with CDP_REGION default|au|eu, or CDP_BASE_URL) makes the relay
forward to the real platform, like --upstream.`;

type Values = Record<string, string | boolean | undefined>;

class UsageError extends Error {
  override name = 'UsageError' as const;
}

function port(values: Values, flag: string, fallback: number): PortChoice {
  const raw = values[flag];
  if (raw === undefined) return { port: fallback };
  const n = Number(raw);
  if (typeof raw !== 'string' || raw.trim() === '' || !Number.isInteger(n) || n < 0 || n > 65535) {
    throw new UsageError(`--${flag} must be a port number from 0 to 65535; got ${JSON.stringify(raw)}`);
  }
  return { port: n, flag: `--${flag}` };
}

/** The real platform when asked for by flag or environment; undefined = the emulator. */
export function chooseUpstream(values: Values, env: Record<string, string | undefined>): (Upstream & { why: string }) | undefined {
  const apiKey = env['CDP_API_KEY']?.trim();
  const flag = values['upstream'];
  if (typeof flag === 'string') {
    let url: URL;
    try {
      url = new URL(flag);
    } catch {
      throw new UsageError(`--upstream must be the platform's base address, like https://api.example.com; got ${JSON.stringify(flag)}`);
    }
    if (!/^https?:$/.test(url.protocol)) throw new UsageError(`--upstream must be an http(s) address; got ${JSON.stringify(flag)}`);
    if (!apiKey) throw new UsageError('--upstream needs the platform key: set CDP_API_KEY in the environment (the relay adds it to every call)');
    return { baseUrl: url.href.replace(/\/+$/, ''), apiKey, why: '--upstream' };
  }
  if (!apiKey) return undefined;
  const explicit = env['CDP_BASE_URL']?.trim();
  if (explicit) return { baseUrl: explicit.replace(/\/+$/, ''), apiKey, why: 'CDP_API_KEY and CDP_BASE_URL in the environment' };
  const region = env['CDP_REGION']?.trim() || 'default';
  if (!isRegion(region)) throw new UsageError(`CDP_REGION must be default, au or eu; got ${JSON.stringify(region)}`);
  return { baseUrl: baseUrlFor(region), apiKey, why: `CDP_API_KEY and CDP_REGION=${region} in the environment` };
}

/** One short line per relay request, without personal data (the log line has none). */
export function formatRelayLine(line: LogLine): string {
  const results = line.results
    ? ` → ${Object.entries(line.results)
        .map(([status, n]) => `${status} ${n}`)
        .join(', ')}`
    : '';
  const items = line.items !== undefined ? `  ${line.items} item${line.items === 1 ? '' : 's'}${results}` : '';
  const upstream = line.upstream?.length ? `  upstream ${line.upstream.join(' ')}` : '';
  const error = line.error ? `  ${line.error}` : '';
  return `  relay  ${line.method} ${line.path} ${line.status}${items}${upstream}${error}  ${Math.round(line.ms)} ms`;
}

function banner(stack: DevStack, upstream: (Upstream & { why: string }) | undefined): string {
  const { demo, relay, emulator } = stack;
  const addresses: Array<[string, string, string]> = [
    ['Demo site', `${demo.url}/`, 'a shop page with the script tag: open this'],
    ['', `${demo.url}/spa/`, 'a single-page app importing createTracker'],
    ['Relay', relay.url, 'POST /collect, POST /server/collect, GET /cdp.js, the /v1/… proxy'],
    ...(relay.metricsUrl
      ? ([['Status', `${relay.metricsUrl}/status`, "the relay's status page (and /metrics for Prometheus)"]] as Array<[string, string, string]>)
      : []),
    emulator ? ['Emulator', `${emulator.url}/`, 'the platform API (X-Api-Key: dev-key) and its dashboard'] : ['Upstream', stack.upstream, 'the real platform'],
  ];
  const width = Math.max(...addresses.map(([, url]) => url.length));
  const rows = [
    upstream
      ? `cdp-edge dev: the relay forwards to the REAL platform at ${stack.upstream} (because of ${upstream.why}).\nEvents and people you send from the demo are created there for real. No emulator is started.`
      : 'cdp-edge dev: everything runs on this machine (loopback); no key, nothing leaves it.',
    '',
    ...addresses.map(([label, url, what]) => `  ${label.padEnd(10)}  ${url.padEnd(width)}  ${what}`),
    ...stack.notes.map((note) => `  (${note})`),
    '',
    'What to click:',
    '  1. Open the demo site. The consent banner starts "pending": events are kept in the browser, not sent.',
    '  2. Add something to the cart and sign up with any email (the demo server signs it: user_hash).',
    "  3. Accept on the banner: the queue goes to the relay; the page's live log shows each answer.",
    emulator
      ? `  4. Open the emulator dashboard (${emulator.url}/): your person and events are there within seconds.`
      : '  4. Look the person up on the platform (or with the read token below).',
    '  Try "Go offline", add more, go back online: nothing is lost and nothing arrives twice.',
    '',
    'A read-only proxy token for this run (servers call the platform through the relay with it):',
    `  ${stack.readToken}`,
    `  curl -X POST ${relay.url}/v1/person/get -H 'Authorization: Bearer ${stack.readToken}' -H 'Content-Type: application/json' -d '{"limit":5}'`,
    '',
    'Press Ctrl-C to stop.',
  ];
  return rows.join('\n');
}

const dev: Command = {
  async run(argv) {
    let values: Values;
    let choices: { emulator: PortChoice; relay: PortChoice; demo: PortChoice };
    let upstream: ReturnType<typeof chooseUpstream>;
    try {
      ({ values } = parseArgs({
        args: argv,
        options: {
          'demo-port': { type: 'string' },
          'relay-port': { type: 'string' },
          'emulator-port': { type: 'string' },
          data: { type: 'string' },
          upstream: { type: 'string' },
          quiet: { type: 'boolean' },
          help: { type: 'boolean', short: 'h' },
        },
      }));
      if (values['help']) {
        console.log(USAGE);
        return 0;
      }
      choices = { emulator: port(values, 'emulator-port', 8790), relay: port(values, 'relay-port', 8787), demo: port(values, 'demo-port', 8080) };
      upstream = chooseUpstream(values, process.env);
      if (upstream && values['data'] !== undefined)
        throw new UsageError("--data keeps the emulator's state, but with a real upstream no emulator runs; drop one of them");
    } catch (error) {
      console.error(`cdp-edge dev: ${(error as Error).message}\n\nRun \`cdp-edge dev --help\` for the options.`);
      return 2;
    }

    // Listen for Ctrl-C before starting anything: a signal during start-up still stops cleanly.
    let onStop = () => {};
    const stopped = new Promise<void>((resolve) => (onStop = resolve));
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      onStop();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);

    const { startDevStack } = await import('../demo/stack.js');
    let stack: DevStack;
    try {
      stack = await startDevStack({
        emulatorPort: choices.emulator,
        relayPort: choices.relay,
        demoPort: choices.demo,
        ...(upstream ? { upstream: { baseUrl: upstream.baseUrl, apiKey: upstream.apiKey } } : {}),
        ...(typeof values['data'] === 'string' ? { data: values['data'] } : {}),
        ...(values['quiet'] ? {} : { logger: (line: LogLine) => console.log(formatRelayLine(line)) }),
      });
    } catch (error) {
      stop();
      const message = error instanceof PortTakenError ? error.message : `could not start: ${(error as Error).message}`;
      console.error(`cdp-edge dev: ${message}`);
      return error instanceof PortTakenError ? 2 : 1;
    }
    console.log(banner(stack, upstream));

    await stopped;
    console.log('\ncdp-edge dev: stopping the relay, the demo site and the emulator…');
    await stack.close();
    console.log('cdp-edge dev: stopped.');
    return 0;
  },
};
export default dev;
