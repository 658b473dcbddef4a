/**
 * `cdp-edge token create --name crm-sync --scopes read,write [--endpoints person/get,…] [--json]`:
 * makes a relay proxy token, prints it once, and prints the entry to add to `RELAY_TOKENS`.
 * @module
 */
import { parseArgs } from 'node:util';
import type { Command } from './command.js';
import { createToken, TOKEN_SCOPES, TokenConfigError } from '../relay/core/tokens.js';

const USAGE = `Usage: cdp-edge token create --name <name> --scopes <${TOKEN_SCOPES.join('|')},…> [--endpoints <id,…>] [--json]

Makes a new random relay token for a server (a backend, a cron job, a CRM sync).
The token is printed once: store it where that server keeps secrets. Only its SHA-256
goes into RELAY_TOKENS, so the relay never holds the token itself.

  --name       who holds the token; shown in the relay's audit log
  --scopes     read (get/list), write (merge/create/modify/archive/...), delete, admin (all),
               metrics (GET /metrics), collect (POST /server/collect: cdp-edge/server's tracker)
  --endpoints  optional: limit the token to these endpoints, e.g. person/get,person/merge
  --json       print {"token","entry"} as one JSON line instead of text`;

const list = (value: string | undefined) =>
  (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');

const parse = (argv: string[]) =>
  parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      scopes: { type: 'string' },
      endpoints: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });

const token: Command = {
  async run(argv) {
    let parsed: ReturnType<typeof parse>;
    try {
      parsed = parse(argv);
    } catch (error) {
      console.error(`cdp-edge token: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    const { values, positionals } = parsed;
    if (values.help) {
      console.log(USAGE);
      return 0;
    }
    if (positionals[0] !== 'create' || positionals.length > 1) {
      console.error(`cdp-edge token: expected \`token create\`; got ${JSON.stringify(positionals.join(' '))}\n\n${USAGE}`);
      return 2;
    }
    const missing = (['name', 'scopes'] as const).filter((option) => !values[option]);
    if (missing.length > 0) {
      console.error(`cdp-edge token create: ${missing.map((option) => `--${option}`).join(' and ')} required\n\n${USAGE}`);
      return 2;
    }
    try {
      const options: { name: string; scopes: string[]; endpoints?: string[] } = { name: values.name ?? '', scopes: list(values.scopes) };
      if (values.endpoints !== undefined) options.endpoints = list(values.endpoints);
      const { token: secret, entry } = await createToken(options);
      if (values.json) {
        console.log(JSON.stringify({ token: secret, entry }));
        return 0;
      }
      console.log(`Token for ${JSON.stringify(entry.name)} (shown once; store it in that server's secrets, send it as Authorization: Bearer <token>):`);
      console.log(`  ${secret}`);
      console.log('Add this entry to the RELAY_TOKENS JSON array:');
      console.log(`  ${JSON.stringify(entry)}`);
      return 0;
    } catch (error) {
      if (!(error instanceof TokenConfigError)) throw error;
      console.error(`cdp-edge token: ${error.message.replace(/^token: /, '')}\n\n${USAGE}`);
      return 2;
    }
  },
};
export default token;
