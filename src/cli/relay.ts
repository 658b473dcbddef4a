/**
 * `cdp-edge relay [--port 8787] [--host 127.0.0.1] [--state-file path] [--workers N]`: the relay on
 * Node, configured by the same environment variables as the Worker's vars.
 * @module
 */
import cluster from 'node:cluster';
import { parseArgs } from 'node:util';
import type { Command } from './command.js';
import { RelayConfigError } from '../relay/core/errors.js';
import { portFrom } from '../relay/node/env.js';
import { DEFAULT_STATE_FILE } from '../relay/state/node.js';
import { untilStopped } from './signals.js';
import type { RunningRelay } from '../relay/node.js';

const USAGE = `Usage: cdp-edge relay [--port 8787] [--host 127.0.0.1] [--state-file ${DEFAULT_STATE_FILE}] [--workers 1] [--metrics-port M] [--metrics-host 127.0.0.1]

Runs the relay: POST /collect for browsers, POST /server/collect and the /v1/... proxy for servers, GET /cdp.js.
Configure it with environment variables (the same names as on Cloudflare Workers):

  PORT                                 or --port: the port to listen on (8787; 0 picks a free one)
  CDP_API_KEY                          the platform key (required, secret)
  CDP_REGION | CDP_BASE_URL            default, au or eu | an explicit base (the emulator)
  RELAY_SITES                          [{"key","origins":[…],"activities","fields","verify","subscribe_unverified","visitor_rate_limit","rate_limit"}]
  RELAY_TOKENS                         [{"name","sha256","scopes":[…]}] for the proxy and /server/collect
  RELAY_IDENTITY_SECRET                HMAC secret for user_hash (needed by verify "required")
  RELAY_IDENTITY_LEGACY_HASH           off (default) or on: also accept the old value-only user_hash
  RELAY_ADDRESS_LOOKUP                 off (default) or on
  RELAY_ADDRESS_LOOKUP_MONTHLY_LIMIT   most address lookups per month
  RELAY_TRUST_PROXY                    addresses whose X-Forwarded-For is believed
  RELAY_STATE_FILE                     the SQLite file of forwarded ids (or --state-file; ":memory:" keeps none)
  RELAY_REDIS_URL                      redis:// or rediss://: every relay process shares its state there
  RELAY_LOG                            info (default: a JSON line per request), debug (and one per item), off
  RELAY_METRICS_PORT                   or --metrics-port: /metrics, /status, /healthz, /readyz on 127.0.0.1:M
  RELAY_METRICS_HOST                   or --metrics-host: the metrics port's address instead of 127.0.0.1 (a container's 0.0.0.0)
  CDP_API_KEY_FILE (and RELAY_IDENTITY_SECRET_FILE, RELAY_REDIS_URL_FILE, RELAY_TOKENS_FILE)
                                       read that variable from a file, as mounted secrets are

--workers N runs N processes on the port, sharing the SQLite file or Redis.`;

const MAX_WORKERS = 64;
/** Where the relay listens when neither --port nor PORT says. */
const DEFAULT_PORT = 8787;

const parse = (argv: string[]) =>
  parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'state-file': { type: 'string' },
      workers: { type: 'string' },
      'metrics-port': { type: 'string' },
      'metrics-host': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  }).values;

const relay: Command = {
  async run(argv) {
    let values: ReturnType<typeof parse>;
    try {
      values = parse(argv);
    } catch (error) {
      console.error(`cdp-edge relay: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    if (values.help) {
      console.log(USAGE);
      return 0;
    }
    // A flag wins over its variable; each refused value names where it came from.
    let port: number;
    let metricsPort: number | undefined;
    try {
      port = portFrom(values.port, '--port') ?? portFrom(process.env['PORT'], 'PORT') ?? DEFAULT_PORT;
      metricsPort = portFrom(values['metrics-port'], '--metrics-port') ?? portFrom(process.env['RELAY_METRICS_PORT'], 'RELAY_METRICS_PORT');
    } catch (error) {
      console.error(`cdp-edge relay: ${(error as Error).message}\n\nRun \`cdp-edge relay --help\` for the variables.`);
      return 2;
    }
    const workers = Number(values.workers ?? 1);
    if (!Number.isInteger(workers) || workers < 1 || workers > MAX_WORKERS) {
      console.error(`cdp-edge relay: --workers must be a whole number from 1 to ${MAX_WORKERS}; got ${JSON.stringify(values.workers)}`);
      return 2;
    }
    const metricsHost = values['metrics-host'] ?? (process.env['RELAY_METRICS_HOST'] || undefined);
    const stateFile = values['state-file'] ?? process.env['RELAY_STATE_FILE'] ?? DEFAULT_STATE_FILE;
    if (workers > 1 && cluster.isPrimary) return runPrimary(workers, metricsPort, metricsHost);
    // Listening for SIGINT and SIGTERM before it starts: one that comes while it starts, or right
    // after the line that says it listens, stops it cleanly once started (not Node's default exit).
    const stopped = untilStopped();
    const { startRelay } = await import('../relay/node.js');
    let running: RunningRelay;
    try {
      // With --workers the primary serves the metrics port for all of them (each worker reports to it).
      running = await startRelay({
        port,
        hostname: values.host ?? '127.0.0.1',
        stateFile,
        // The process is the CLI's own: its old generation grows to 1.5× its live heap (docs/deploy.md, "Memory").
        boundHeapGrowth: true,
        ...(cluster.isWorker ? { clusterWorker: true } : metricsPort === undefined ? {} : { metricsPort }),
        ...(metricsHost === undefined ? {} : { metricsHostname: metricsHost }),
      });
    } catch (error) {
      if (error instanceof RelayConfigError) {
        console.error(`cdp-edge relay: ${error.message}\n\nRun \`cdp-edge relay --help\` for the variables.`);
        return 2;
      }
      console.error(`cdp-edge relay: could not start: ${(error as Error).message}`);
      return 1;
    }
    if (cluster.isWorker) process.send?.({ listening: running.url, state: running.state });
    else {
      console.log(`cdp-edge relay listening on ${running.url} (POST ${running.url}/collect; state: ${running.state})`);
      if (running.metricsUrl) console.log(`cdp-edge relay metrics on ${running.metricsUrl}/metrics (status page ${running.metricsUrl}/status)`);
    }
    await stopped;
    await running.close();
    // A worker's channel to the primary would keep it alive: let go of it so the process ends.
    if (cluster.isWorker) cluster.worker?.disconnect();
    return 0;
  },
};

/**
 * Forks `count` relay processes that share the listening port (node:cluster) and the state. A
 * process that dies is replaced; SIGINT or SIGTERM stops them all.
 */
async function runPrimary(count: number, metricsPort: number | undefined, metricsHost: string | undefined): Promise<number> {
  let stopping = false;
  let ops: { url: string; close(): Promise<void> } | undefined;
  if (metricsPort !== undefined) {
    const { startClusterOps } = await import('../relay/ops/cluster.js');
    try {
      ops = await startClusterOps({ port: metricsPort, ...(metricsHost === undefined ? {} : { hostname: metricsHost }) });
    } catch (error) {
      console.error(`cdp-edge relay: could not start the metrics port: ${(error as Error).message}`);
      return 1;
    }
  }
  let announced = false;
  let failedAtStart = 0;
  const fork = () => {
    const worker = cluster.fork();
    worker.on('message', (message: { listening?: string; state?: string }) => {
      if (message.listening === undefined || announced) return;
      announced = true;
      console.log(`cdp-edge relay listening on ${message.listening} (POST ${message.listening}/collect; ${count} workers; state: ${message.state})`);
      if (ops) console.log(`cdp-edge relay metrics on ${ops.url}/metrics (status page ${ops.url}/status)`);
    });
  };
  const exited = new Promise<number>((resolve) => {
    cluster.on('exit', (worker, code, signal) => {
      if (stopping) {
        if (Object.keys(cluster.workers ?? {}).length === 0) resolve(0);
        return;
      }
      if (!announced && ++failedAtStart >= count) {
        // Every worker failed before listening: a configuration error, not a crash to retry.
        stopping = true;
        resolve(code === 2 ? 2 : 1);
        return;
      }
      console.error(`cdp-edge relay: worker ${worker.process.pid} exited (${signal ?? code}); starting another`);
      fork();
    });
  });
  for (let i = 0; i < count; i++) fork();
  const stopped = untilStopped().then(() => {
    stopping = true;
    // The signal itself, not worker.kill(): that disconnects first, and the worker must close its server and store.
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    return exited;
  });
  const code = await Promise.race([stopped, exited]);
  await ops?.close();
  return code;
}

export default relay;
