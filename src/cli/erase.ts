/**
 * `cdp-edge erase --email X | --external-id Y --relay URL`: erases one person at a deployed relay
 * (a Worker, or a Node relay) through its admin endpoint (`POST /admin/erase`, src/relay/ops/erase.ts)
 * with an admin-scoped relay token: their waiting entries and dead letters dropped, their items
 * suppressed from then on, their records deleted on the platform. Prints the relay's report.
 * @module
 */
import ky from 'ky';
import { parseArgs } from 'node:util';
import type { Command } from './command.js';
import { explain } from './outbox-remote.js';
import type { EraseReport } from '../relay/ops/erase.js';
import { SUPPRESS_DAYS } from '../relay/state/erase.js';

const USAGE = `Usage: cdp-edge erase --email <address> | --external-id <id> --relay <url> [--site <key>] [--days <n>] [--json]

Erases one person at the relay: drops their entries waiting in the outbox and their dead letters
(on every store the relay uses), refuses items naming them from then on (answered rejected,
reason "suppressed"), then deletes their records on the platform (person/get, person/archive,
person/delete). Entries a deliverer holds for a call at that moment cannot be recalled: the
relay then leaves the platform alone and says so; run the same command again a minute later.

  --email        the person's email (compared trimmed and in lower case)
  --external-id  the person's external id (str::ei), as sent
  --site         only this site's entries and items (a site's key) @default every site
  --days         how long items naming them stay refused @default ${SUPPRESS_DAYS}
  --json         the relay's report as JSON
  --relay        the relay's address (a Worker, or a Node relay)
  --token        a relay token with the admin scope @default RELAY_ADMIN_TOKEN
                 (\`cdp-edge token create --name ops --scopes admin\`)`;

class UsageError extends Error {}

const parse = (argv: string[]) =>
  parseArgs({
    args: argv,
    options: {
      email: { type: 'string' },
      'external-id': { type: 'string' },
      site: { type: 'string' },
      days: { type: 'string' },
      json: { type: 'boolean' },
      relay: { type: 'string' },
      token: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });

/** The request body the options name; a usage error otherwise (nothing is sent). */
function requestOf(values: ReturnType<typeof parse>['values']): { body: Record<string, unknown>; relay: string; token: string } {
  const { email, site, days } = values;
  const external = values['external-id'];
  if ((email === undefined) === (external === undefined)) throw new UsageError('name the person by --email or by --external-id (one of them)');
  const value = (email ?? external)!.trim();
  if (value === '') throw new UsageError(`${email === undefined ? '--external-id' : '--email'} is empty`);
  if (days !== undefined && !/^[1-9]\d{0,3}$/.test(days)) throw new UsageError(`--days must be a whole number from 1 to 3650; got ${JSON.stringify(days)}`);
  if (values.relay === undefined)
    throw new UsageError("--relay URL is required: the erasure runs in the relay, which holds the outbox, the suppression list and the platform's key");
  if (!/^https?:\/\/[^/]/.test(values.relay)) throw new UsageError(`--relay must be the relay's http(s) address; got ${JSON.stringify(values.relay)}`);
  const token = values.token ?? process.env['RELAY_ADMIN_TOKEN'];
  if (token === undefined || token === '') throw new UsageError('--relay needs a token with the admin scope: --token T, or RELAY_ADMIN_TOKEN');
  const body = {
    ...(email === undefined ? { external_id: value } : { email: value }),
    ...(site === undefined ? {} : { site }),
    ...(days === undefined ? {} : { days: Number(days) }),
  };
  return { body, relay: values.relay, token };
}

const counted = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** The report for people: what was dropped, how long they stay refused, what the platform did. */
export function describeReport(report: EraseReport): string {
  const { platform } = report;
  const lines = [
    `erased person ${report.person} (${report.site === null ? 'every site' : `site ${report.site}`})`,
    `  dropped:    ${counted(report.dropped.waiting, 'waiting entry', 'waiting entries')}, ${counted(report.dropped.dead_letters, 'dead letter', 'dead letters')}`,
    `  suppressed: until ${report.suppressed_until}`,
  ];
  if (report.in_flight > 0) lines.push(`  in flight:  ${counted(report.in_flight, 'entry', 'entries')} held by a deliverer for a call`);
  if (platform.status === 'deleted') lines.push(`  platform:   found ${platform.found}, archived ${platform.archived}, deleted ${platform.deleted}`);
  else if (platform.status === 'skipped') lines.push(`  platform:   not asked: ${platform.reason}`);
  else lines.push(`  platform:   ${platform.step} failed (${platform.http_status ?? platform.error}): run the same command again`);
  return lines.join('\n');
}

const erase: Command = {
  async run(argv) {
    let values: ReturnType<typeof parse>['values'];
    try {
      values = parse(argv).values;
    } catch (error) {
      console.error(`cdp-edge erase: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    if (values.help) {
      console.log(USAGE);
      return 0;
    }
    try {
      const { body, relay, token } = requestOf(values);
      let report: EraseReport;
      try {
        const url = `${relay.replace(/\/+$/, '')}/admin/erase`;
        report = await ky.post(url, { json: body, headers: { authorization: `Bearer ${token}` }, timeout: 120_000, retry: 0 }).json<EraseReport>();
      } catch (error) {
        throw explain(error, relay);
      }
      console.log(values.json ? JSON.stringify(report) : describeReport(report));
      return report.complete ? 0 : 1;
    } catch (error) {
      console.error(`cdp-edge erase: ${(error as Error).message}${error instanceof UsageError ? `\n\n${USAGE}` : ''}`);
      return error instanceof UsageError ? 2 : 1;
    }
  },
};
export default erase;
