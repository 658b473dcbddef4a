/**
 * `cdp-edge outbox list|retry|drop`: the dead letters of a relay's outbox (entries the platform
 * refused after the relay accepted them, or whose outcome is unknown), read from the same state
 * the relay keeps (`RELAY_REDIS_URL`, else `RELAY_STATE_FILE`), or from a deployed relay's admin
 * endpoints (`--relay URL` with an admin-scoped token).
 * @module
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Command } from './command.js';
import type { DeadLetter } from '../relay/state/outbox.js';
import { createNodeOutbox, DEFAULT_STATE_FILE } from '../relay/state/node.js';
import { sqliteDriverChoice } from '../relay/state/sqlite-driver.js';
import { type DeadLetterDoor, remoteOutbox } from './outbox-remote.js';

const USAGE = `Usage: cdp-edge outbox list [--site <key>] [--limit <n>] [--json]
       cdp-edge outbox retry <seq…> | --all
       cdp-edge outbox drop <seq…> | --all

The dead letters of the relay's outbox: entries the platform refused after the relay had
accepted them, or whose outcome is unknown (held rather than sent twice).

  list         seq, site, id, kind, reason, HTTP status and age of each, oldest first
  retry        puts them back in the outbox: the relay's deliverer sends them again
  drop         deletes them for good

  --all        every dead letter (retry, drop)
  --site       only this site's key (list)
  --limit      at most this many (list)
  --json       one JSON array, entries included (list)
  --state-file the relay's SQLite file @default RELAY_STATE_FILE, else ${DEFAULT_STATE_FILE}
  --redis-url  the relay's Redis (wins over --state-file) @default RELAY_REDIS_URL
  --relay      a deployed relay's address (a Worker, or a Node relay elsewhere): its admin
               endpoints, with --token (wins over --redis-url and --state-file)
  --token      a relay token with the admin scope @default RELAY_ADMIN_TOKEN
               (\`cdp-edge token create --name ops --scopes admin\`)`;

const parse = (argv: string[]) =>
  parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      all: { type: 'boolean' },
      site: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
      'state-file': { type: 'string' },
      'redis-url': { type: 'string' },
      relay: { type: 'string' },
      token: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });

type Parsed = ReturnType<typeof parse>;

class UsageError extends Error {}

/** `3s`, `12m`, `5h`, `2d`: how long ago a letter failed. */
export function age(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

function table(letters: readonly DeadLetter[], now: number): string {
  const rows = [
    ['SEQ', 'SITE', 'ID', 'KIND', 'REASON', 'STATUS', 'AGE'],
    ...letters.map((letter) => [
      String(letter.seq),
      letter.site,
      letter.id,
      letter.kind,
      letter.reason,
      String(letter.status ?? '-'),
      age(now - letter.failed),
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** The seqs named on the command line, or undefined for `--all`; exactly one of the two. */
function chosen(action: string, seqs: string[], all: boolean | undefined): number[] | undefined {
  if (all && seqs.length > 0) throw new UsageError(`${action}: give seqs or --all, not both`);
  if (all) return undefined;
  if (seqs.length === 0) throw new UsageError(`${action}: name the dead letters by seq (see \`cdp-edge outbox list\`), or --all`);
  return seqs.map((raw) => {
    const seq = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(seq) || seq < 1)
      throw new UsageError(`${action}: ${JSON.stringify(raw)} is not a seq (a whole number from \`cdp-edge outbox list\`)`);
    return seq;
  });
}

/** The outbox the options and environment name, and how to let go of it; a missing SQLite file is an error, never created. */
async function open(values: Parsed['values']): Promise<{ door: DeadLetterDoor; close(): Promise<void> }> {
  if (values.relay !== undefined) {
    const token = values.token ?? process.env['RELAY_ADMIN_TOKEN'];
    if (token === undefined || token === '') throw new UsageError('--relay needs a token with the admin scope: --token T, or RELAY_ADMIN_TOKEN');
    if (!/^https?:\/\/[^/]/.test(values.relay)) throw new UsageError(`--relay must be the relay's http(s) address; got ${JSON.stringify(values.relay)}`);
    return { door: remoteOutbox(values.relay, token), close: async () => {} };
  }
  if (values.token !== undefined) throw new UsageError('--token goes with --relay URL');
  const redisUrl = values['redis-url'] ?? process.env['RELAY_REDIS_URL'];
  const local = async (store: Awaited<ReturnType<typeof createNodeOutbox>>) => ({ door: store.outbox, close: () => store.close() });
  if (redisUrl !== undefined && redisUrl !== '') return local(await createNodeOutbox({ redisUrl }));
  const stateFile = values['state-file'] ?? process.env['RELAY_STATE_FILE'] ?? DEFAULT_STATE_FILE;
  if (stateFile === ':memory:') throw new UsageError('an in-memory relay keeps its outbox in its own process: nothing to read here');
  if (!existsSync(stateFile)) throw new Error(`no relay state file at ${stateFile} (set RELAY_STATE_FILE or --state-file, or RELAY_REDIS_URL / --redis-url)`);
  return local(await createNodeOutbox({ stateFile, sqliteDriver: sqliteDriverChoice(process.env) }));
}

async function act(outbox: DeadLetterDoor, action: string, values: Parsed['values'], seqs: string[]): Promise<void> {
  const now = Date.now();
  if (action === 'list') {
    const limit = values.limit === undefined ? undefined : Number(values.limit);
    if (limit !== undefined && !(Number.isSafeInteger(limit) && limit > 0))
      throw new UsageError(`list: --limit must be a whole number above 0, got ${JSON.stringify(values.limit)}`);
    const letters = await outbox.deadLetters({ ...(values.site === undefined ? {} : { site: values.site }), ...(limit === undefined ? {} : { limit }) });
    if (values.json) console.log(JSON.stringify(letters));
    else console.log(letters.length === 0 ? 'no dead letters' : table(letters, now));
    return;
  }
  const named = chosen(action, seqs, values.all);
  const count = action === 'retry' ? await outbox.retryDead(named, now) : await outbox.dropDead(named);
  const missing = named === undefined ? 0 : new Set(named).size - count;
  const verb = action === 'retry' ? 'retried' : 'dropped';
  console.log(`${verb} ${count} dead letter${count === 1 ? '' : 's'}${missing > 0 ? ` (${missing} not found)` : ''}`);
}

const outbox: Command = {
  async run(argv) {
    let parsed: Parsed;
    try {
      parsed = parse(argv);
    } catch (error) {
      console.error(`cdp-edge outbox: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    const { values, positionals } = parsed;
    if (values.help) {
      console.log(USAGE);
      return 0;
    }
    const [action, ...seqs] = positionals;
    if (action !== 'list' && action !== 'retry' && action !== 'drop') {
      console.error(`cdp-edge outbox: expected list, retry or drop; got ${JSON.stringify(action ?? '')}\n\n${USAGE}`);
      return 2;
    }
    if (action === 'list' && (seqs.length > 0 || values.all)) {
      console.error(`cdp-edge outbox list: takes no seqs and no --all\n\n${USAGE}`);
      return 2;
    }
    let store: Awaited<ReturnType<typeof open>> | undefined;
    try {
      if (action !== 'list') chosen(action, seqs, values.all); // bad seqs are refused before anything is opened
      store = await open(values);
      await act(store.door, action, values, seqs);
      return 0;
    } catch (error) {
      console.error(`cdp-edge outbox: ${(error as Error).message}${error instanceof UsageError ? `\n\n${USAGE}` : ''}`);
      return error instanceof UsageError ? 2 : 1;
    } finally {
      await store?.close();
    }
  },
};
export default outbox;
