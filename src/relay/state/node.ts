/**
 * Which state a Node relay keeps, from its options or environment:
 * `RELAY_REDIS_URL` → Redis (every relay process shares it); else `RELAY_STATE_FILE` → SQLite
 * (one machine; `--workers` processes share the file); `:memory:` → memory only (forgets on restart).
 * @module
 */
import { createReadStream, existsSync, readFileSync, renameSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { createMemoryOutbox, createMemoryPacer } from './memory-outbox.js';
import { CATCH_UP_MS, DEFAULT_PLATFORM_RATE } from './pace.js';
import type { Outbox, OutboxStore, Pacer } from './outbox.js';
import { RelayConfigError } from '../core/errors.js';
import { createMemoryLimiter, type RateLimiter } from '../core/limits.js';
import { createMemoryStore } from './memory.js';
import type { RelayStore } from './store.js';
import { createRedisState } from './redis.js';
import { createRedisOutbox } from './redis-outbox.js';
import { createSqliteStore } from './sqlite.js';
import type { SqliteDriverName } from './sqlite-driver.js';
import { createSqliteOutbox } from './sqlite-outbox.js';

/** Where the CLI keeps its state when nothing is configured. */
export const DEFAULT_STATE_FILE = '.cdp-edge/relay-state.db';
/** The JSON-lines file that cdp-edge 0.1 kept; its ids are imported once into the SQLite file. */
const LEGACY_STATE_FILE = '.cdp-edge/relay-state.jsonl';

export interface NodeStateOptions {
  /** SQLite file, or `:memory:` */
  stateFile?: string | undefined;
  /** `redis://` or `rediss://`: wins over `stateFile` */
  redisUrl?: string | undefined;
  /** told what was chosen and what was imported */
  log?: (message: string) => void;
  /** platform calls per second the pacer grants (`RELAY_PLATFORM_RATE`) @default 10 */
  platformRate?: number;
  /**
   * start on a Redis whose persistence settings can lose accepted items, or cannot be read, with a
   * warning (`RELAY_REDIS_UNSAFE=on`); without it such a Redis is refused @default false
   */
  redisUnsafe?: boolean;
  /** the SQLite driver (`RELAY_SQLITE_DRIVER`, sqlite-driver.ts) @default Node's own where it has one, else libsql */
  sqliteDriver?: SqliteDriverName | undefined;
}

export { DEFAULT_PLATFORM_RATE };

export interface NodeState {
  store: RelayStore;
  limiter: RateLimiter;
  /** accepted items waiting for the deliverer, in the same backend as `store` */
  outbox: Outbox;
  /** the platform budget, shared by every process that uses the same backend */
  pacer: Pacer;
  /** closes `store` and the outbox's connection */
  close(): Promise<void>;
  /** for the start-up line, e.g. `SQLite .cdp-edge/relay-state.db` (never a password) */
  description: string;
}

/** Checks `RELAY_REDIS_URL`'s scheme before anything connects. */
function checkRedisUrl(url: string): string {
  if (!/^rediss?:\/\//.test(url)) throw new Error(`RELAY_REDIS_URL must start with redis:// or rediss://, got ${JSON.stringify(url.slice(0, 12))}…`);
  return url;
}

/**
 * Opens the outbox the options name: Redis, else the SQLite file (default `DEFAULT_STATE_FILE`),
 * or memory for `:memory:`. What `cdp-edge outbox` reads; `createNodeState` opens it with the store.
 */
export async function createNodeOutbox(options: Pick<NodeStateOptions, 'stateFile' | 'redisUrl' | 'sqliteDriver'>): Promise<OutboxStore> {
  if (options.redisUrl !== undefined) return createRedisOutbox(checkRedisUrl(options.redisUrl));
  const path = options.stateFile ?? DEFAULT_STATE_FILE;
  if (path === ':memory:') {
    const outbox = createMemoryOutbox();
    const pacers = new Map<number, Pacer>();
    return {
      outbox,
      pacer: (rate, catchUpMs) => pacers.get(rate) ?? pacers.set(rate, createMemoryPacer(rate, catchUpMs)).get(rate)!,
      async close() {},
    };
  }
  return openingStateFile(path, () => createSqliteOutbox(path, { driver: options.sqliteDriver }));
}

/**
 * `open` of the SQLite state file at `path`, whose failure of the system or of SQLite (a
 * directory, a path under a file, no permission: an error with a `code`) names the file and where
 * it is set; their own messages (`EISDIR: illegal operation on a directory, read`, `unable to open
 * database file`) name neither. Others (a driver RELAY_SQLITE_DRIVER names wrongly) keep their words.
 */
async function openingStateFile<T>(path: string, open: () => T | Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (error) {
    if (error instanceof RelayConfigError || typeof (error as { code?: unknown } | undefined)?.code !== 'string') throw error;
    throw new Error(`the state file ${JSON.stringify(path)} (RELAY_STATE_FILE or --state-file) could not be opened: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** Opens the state the options name (the caller closes it with `close`). */
export async function createNodeState(options: NodeStateOptions): Promise<NodeState> {
  const rate = options.platformRate ?? DEFAULT_PLATFORM_RATE;
  const withOutbox = async (state: { store: RelayStore; limiter: RateLimiter; description: string }): Promise<NodeState> => {
    const outbox = await createNodeOutbox(options).catch(async (error: unknown) => {
      await state.store.close();
      throw error;
    });
    return {
      ...state,
      outbox: outbox.outbox,
      // One deliverer (the leader) sends through this pacer, past one spacer: it may catch up.
      pacer: outbox.pacer(rate, CATCH_UP_MS),
      description: `${state.description}${outbox.driver === undefined ? '' : ` via ${outbox.driver}`}${outbox.durability === undefined ? '' : ` (${outbox.durability})`}`,
      async close() {
        await Promise.all([state.store.close(), outbox.close()]);
      },
    };
  };
  if (options.redisUrl !== undefined) {
    const persistence = { unsafe: options.redisUnsafe ?? false, warn: (message: string) => (options.log ?? console.warn)(message) };
    const { store, limiter } = await createRedisState(checkRedisUrl(options.redisUrl), { persistence });
    return withOutbox({ store, limiter, description: `Redis ${new URL(options.redisUrl).host}` });
  }
  const path = options.stateFile ?? DEFAULT_STATE_FILE;
  if (path === ':memory:') return withOutbox({ store: createMemoryStore(), limiter: createMemoryLimiter(), description: 'memory (forgotten on restart)' });
  const { store, legacy, backup } = await openingStateFile(path, async () => {
    const legacy = isJsonLines(path) ? path : path === DEFAULT_STATE_FILE && !existsSync(path) && existsSync(LEGACY_STATE_FILE) ? LEGACY_STATE_FILE : undefined;
    let backup: string | undefined;
    if (legacy === path) {
      backup = `${path}.jsonl-backup`;
      renameSync(path, backup);
    }
    return { store: await createSqliteStore(path, { driver: options.sqliteDriver }), legacy, backup };
  });
  if (legacy !== undefined) {
    const imported = await importJsonLines(backup ?? legacy, store);
    options.log?.(`imported ${imported} forwarded ids and counters from the old state file ${backup ?? legacy} into ${path}`);
  }
  // Buckets stay per process: with --workers N and no Redis, a visitor's allowance is up to N times the rate.
  return withOutbox({ store, limiter: createMemoryLimiter(), description: `SQLite ${path}` });
}

function isJsonLines(path: string): boolean {
  if (!existsSync(path)) return false;
  const head = readFileSync(path, { encoding: 'utf8', flag: 'r' }).slice(0, 16);
  return head.startsWith('{') || (head === '' && path.endsWith('.jsonl'));
}

/** Replays an 0.1 JSON-lines state file (forwarded ids, counters) into `store`; unreadable lines are skipped. */
async function importJsonLines(path: string, store: RelayStore): Promise<number> {
  const now = Date.now();
  const counters = new Map<string, { site: string; name: string; value: number }>();
  let forwarded: { site: string; id: string; until: number }[] = [];
  let count = 0;
  const flush = async () => {
    const bySite = new Map<string, Map<number, string[]>>();
    for (const entry of forwarded) {
      const byUntil = bySite.get(entry.site) ?? new Map<number, string[]>();
      bySite.set(entry.site, byUntil);
      byUntil.set(entry.until, [...(byUntil.get(entry.until) ?? []), entry.id]);
    }
    for (const [site, byUntil] of bySite) for (const [until, ids] of byUntil) await store.settle({ site }, { forwarded: ids, until, released: [] });
    forwarded = [];
  };
  for await (const line of createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Number.POSITIVE_INFINITY })) {
    let entry: { kind?: string; scope?: string; id?: string; name?: string; until?: number; value?: number };
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // a line cut short by a crash mid-write: the old store skipped it too
    }
    if (entry.kind === 'forwarded' && typeof entry.scope === 'string' && typeof entry.id === 'string' && typeof entry.until === 'number' && entry.until > now) {
      forwarded.push({ site: entry.scope, id: entry.id, until: entry.until });
      count++;
      if (forwarded.length >= 1000) await flush();
    } else if (entry.kind === 'counter' && typeof entry.scope === 'string' && typeof entry.name === 'string' && typeof entry.value === 'number') {
      counters.set(`${entry.scope}\u0000${entry.name}`, { site: entry.scope, name: entry.name, value: entry.value });
    }
  }
  await flush();
  for (const { site, name, value } of counters.values()) await store.add(site, name, value, Number.POSITIVE_INFINITY);
  return count + counters.size;
}
