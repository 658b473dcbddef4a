/**
 * `cdp-edge relay [--port 8787] [--host 127.0.0.1] [--state-file path]`: the relay on Node,
 * configured by Contract 3's environment variables (the same names as the Worker's vars).
 * @module
 */
import { parseArgs } from 'node:util';
import type { Command } from '../cli.js';
import { RelayConfigError } from '../relay/errors.js';
import { untilStopped } from './signals.js';

const USAGE = `Usage: cdp-edge relay [--port 8787] [--host 127.0.0.1] [--state-file .cdp-edge/relay-state.jsonl]

Runs the relay: POST /collect for browsers, the /v1/... proxy for servers, GET /cdp.js.
Configure it with environment variables (the same names as on Cloudflare Workers):

  CDP_API_KEY                          the platform key (required, secret)
  CDP_REGION | CDP_BASE_URL            default, au or eu | an explicit base (the emulator)
  RELAY_SITES                          [{"key","origins":[…],"activities","fields","verify"}]
  RELAY_TOKENS                         [{"name","sha256","scopes":[…]}] for the proxy
  RELAY_IDENTITY_SECRET                HMAC secret for user_hash (verify optional/required)
  RELAY_ADDRESS_LOOKUP                 off (default) or on
  RELAY_ADDRESS_LOOKUP_MONTHLY_LIMIT   most address lookups per month
  RELAY_TRUST_PROXY                    addresses whose X-Forwarded-For is believed
  RELAY_STATE_FILE                     where forwarded ids survive restarts (or --state-file)`;

const relay: Command = {
  summary: 'run the relay on Node (POST /collect, the /v1 proxy, /cdp.js); configured by environment',
  async run(argv) {
    let values;
    try {
      ({ values } = parseArgs({
        args: argv,
        options: { port: { type: 'string' }, host: { type: 'string' }, 'state-file': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      }));
    } catch (error) {
      console.error(`cdp-edge relay: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    if (values.help) {
      console.log(USAGE);
      return 0;
    }
    const port = Number(values.port ?? process.env['PORT'] ?? 8787);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      console.error(`cdp-edge relay: --port must be a port number (0–65535); got ${JSON.stringify(values.port)}`);
      return 2;
    }
    const { startRelay } = await import('../relay/node.js');
    let running;
    try {
      running = await startRelay({
        port,
        hostname: values.host ?? '127.0.0.1',
        stateFile: values['state-file'] ?? process.env['RELAY_STATE_FILE'] ?? '.cdp-edge/relay-state.jsonl',
      });
    } catch (error) {
      if (error instanceof RelayConfigError) {
        console.error(`cdp-edge relay: ${error.message}\n\nRun \`cdp-edge relay --help\` for the variables.`);
        return 2;
      }
      console.error(`cdp-edge relay: could not start: ${(error as Error).message}`);
      return 1;
    }
    console.log(`cdp-edge relay listening on ${running.url} (POST ${running.url}/collect)`);
    await untilStopped();
    await running.close();
    return 0;
  },
};
export default relay;
