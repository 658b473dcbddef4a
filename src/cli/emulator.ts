/**
 * `cdp-edge emulator [--port 8790] [--key dev-key] [--region default|au|eu] [--plan business]
 * [--data file.json] [--rate-limit [N]] [--latency-ms MS] [--jitter-ms MS] [--faults JSON] [--tracking-plan FILE]`: the platform API
 * run locally. `--plan` is the account's plan tier; `--tracking-plan` a tracking plan file.
 * @module
 */
import { parseArgs } from 'node:util';
import type { Command } from './command.js';
import { createClient } from '../client/index.js';
import { readPlanFile } from '../plan/files.js';
import { seedPlan } from '../plan/push.js';
import type { Plan } from '../plan/schema.js';
import type { RunningEmulator } from '../emulator/node.js';
import { untilStopped } from './signals.js';

const USAGE = `Usage: cdp-edge emulator [options]

Serves the platform API (all 29 /v1 endpoints) on loopback, with a dashboard at /.

  --port N            port to listen on (default 8790; 0 picks a free one)
  --host ADDRESS      address to bind (default 127.0.0.1)
  --key KEY           the accepted X-Api-Key (default dev-key)
  --region R          default, au or eu (default default)
  --plan P            professional or business (default business; address lookup needs business)
  --data FILE         load the state from FILE when it exists, and write changes back to it
  --rate-limit [N]    limit requests per second: N, or the plan's rate (10 professional, 30 business)
  --latency-ms MS     spend MS on each call before applying and answering it, like a distant platform
  --jitter-ms MS      count each call, at random, as it arrives or MS later (answers still take --latency-ms)
  --faults JSON       fail on purpose, e.g. '{"person/merge":{"status":503,"rate":0.2}}';
                      "applied":true applies the call, then fails it ('{"activities/create":{"status":504,"applied":true}}'),
                      "drop":"close" or "hang" answers nothing (a dropped connection, a timeout)
  --tracking-plan F   start with the custom fields and activity definitions of this tracking plan`;

const fault = (message: string) => {
  console.error(`cdp-edge emulator: ${message}\n\n${USAGE}`);
  return 2;
};

const parseOptions = (args: string[]) =>
  parseArgs({
    args,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      key: { type: 'string' },
      region: { type: 'string' },
      plan: { type: 'string' },
      data: { type: 'string' },
      'rate-limit': { type: 'string' },
      'latency-ms': { type: 'string' },
      'jitter-ms': { type: 'string' },
      faults: { type: 'string' },
      'tracking-plan': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });

const emulator: Command = {
  async run(argv) {
    // `--rate-limit` may stand alone (the plan's rate): give it the value `plan` before parsing
    const args = argv.flatMap((arg, i) => (arg === '--rate-limit' && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--')) ? [arg, 'plan'] : [arg]));
    let values: ReturnType<typeof parseOptions>['values'];
    try {
      ({ values } = parseOptions(args));
    } catch (error) {
      return fault((error as Error).message);
    }
    if (values.help) {
      console.log(USAGE);
      return 0;
    }
    const port = Number(values.port ?? 8790);
    if (!Number.isInteger(port) || port < 0 || port > 65535) return fault(`--port must be a port number (0–65535); got ${JSON.stringify(values.port)}`);
    const rate = values['rate-limit'];
    const rateLimit = rate === undefined ? false : rate === 'plan' ? true : Number(rate);
    if (typeof rateLimit === 'number' && !(Number.isFinite(rateLimit) && rateLimit > 0))
      return fault(`--rate-limit must be a number of requests per second; got ${JSON.stringify(rate)}`);
    const latencyMs = Number(values['latency-ms'] ?? 0);
    if (!(Number.isFinite(latencyMs) && latencyMs >= 0))
      return fault(`--latency-ms must be a number of milliseconds ≥ 0; got ${JSON.stringify(values['latency-ms'])}`);
    const jitterMs = Number(values['jitter-ms'] ?? 0);
    if (!(Number.isFinite(jitterMs) && jitterMs >= 0))
      return fault(`--jitter-ms must be a number of milliseconds ≥ 0; got ${JSON.stringify(values['jitter-ms'])}`);
    let faults: unknown;
    if (values.faults !== undefined) {
      try {
        faults = JSON.parse(values.faults) as unknown;
      } catch (error) {
        return fault(`--faults must be JSON: ${(error as Error).message}`);
      }
    }
    let trackingPlan: Plan | undefined;
    if (values['tracking-plan'] !== undefined) {
      try {
        trackingPlan = readPlanFile(values['tracking-plan']);
      } catch (error) {
        return fault((error as Error).message);
      }
    }
    // Listening for SIGINT and SIGTERM before it starts, so one right after its first line stops it cleanly.
    const stopped = untilStopped();
    const { startEmulator } = await import('../emulator/node.js');
    let running: RunningEmulator;
    try {
      running = await startEmulator({
        port,
        hostname: values.host ?? '127.0.0.1',
        key: values.key ?? 'dev-key',
        rateLimit,
        latencyMs,
        jitterMs,
        ...(values.region !== undefined ? { region: values.region as 'default' } : {}),
        ...(values.plan !== undefined ? { plan: values.plan as 'business' } : {}),
        ...(values.data !== undefined ? { data: values.data } : {}),
        ...(faults !== undefined ? { faults: faults as Record<string, { status: number }> } : {}),
      });
    } catch (error) {
      if (error instanceof TypeError || error instanceof RangeError || error instanceof SyntaxError) return fault((error as Error).message);
      console.error(`cdp-edge emulator: could not start: ${(error as Error).message}`);
      return 1;
    }
    if (trackingPlan) {
      try {
        // through the API itself, so the emulator holds what a platform would after `plan push`
        const seeded = await seedPlan(createClient({ apiKey: running.emulator.options.key, baseUrl: running.url, retry: false }), trackingPlan);
        console.log(`cdp-edge emulator: tracking plan ${values['tracking-plan']}: ${seeded.created} created, ${seeded.modified} adopted`);
      } catch (error) {
        console.error(`cdp-edge emulator: could not load the tracking plan: ${(error as Error).message}`);
        await running.close();
        return 1;
      }
    }
    console.log(
      `cdp-edge emulator listening on ${running.url} (key ${running.emulator.options.key}, region ${running.emulator.options.region}, plan ${running.emulator.options.plan}${values.data ? `, data ${values.data}` : ''})`,
    );
    await stopped;
    await running.close();
    return 0;
  },
};
export default emulator;
