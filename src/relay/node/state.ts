/**
 * Where the Node relay keeps its state: what the caller gave, else memory (no file, no Redis),
 * else the SQLite file or Redis (state/node.ts). The outbox and pacer live with the state: Redis
 * for many processes, the SQLite file for one machine.
 * @module
 */
import type { RelayConfig } from '../core/config.js';
import { createMemoryLimiter, type OwnLimiter, type RateLimiter, withLimitAll } from '../core/limits.js';
import { createMemoryOutbox, createMemoryPacer } from '../state/memory-outbox.js';
import { CATCH_UP_MS } from '../state/pace.js';
import { createMemoryStore } from '../state/memory.js';
import { createNodeState } from '../state/node.js';
import type { Outbox, Pacer } from '../state/outbox.js';
import type { RelayStore } from '../state/store.js';
import { sqliteDriverChoice } from '../state/sqlite-driver.js';
import { redisUnsafe } from './env.js';

export interface NodeStateChoice {
  store?: RelayStore | undefined;
  limiter?: OwnLimiter | undefined;
  outbox?: Outbox | undefined;
  pacer?: Pacer | undefined;
  stateFile?: string | undefined;
  redisUrl?: string | undefined;
}

export interface OpenedState {
  store: RelayStore;
  limiter: RateLimiter;
  outbox: Outbox;
  pacer: Pacer;
  /** which state it keeps, e.g. `SQLite .cdp-edge/relay-state.db` */
  description: string;
  /** closes what this opened (nothing when the store was given) */
  close(): Promise<void>;
}

/** Opens the state `options` and `env` name (`RELAY_STATE_FILE`, `RELAY_REDIS_URL`, `RELAY_REDIS_UNSAFE`). */
export async function openNodeState(options: NodeStateChoice, config: RelayConfig, env: Record<string, string | undefined>): Promise<OpenedState> {
  const stateFile = options.stateFile ?? env['RELAY_STATE_FILE'];
  const redisUrl = options.redisUrl ?? env['RELAY_REDIS_URL'];
  const givenLimiter = () => withLimitAll(options.limiter ?? createMemoryLimiter());
  const state =
    options.store !== undefined
      ? { store: options.store, limiter: givenLimiter(), description: 'given' }
      : stateFile === undefined && redisUrl === undefined
        ? { store: createMemoryStore(), limiter: givenLimiter(), description: 'memory (forgotten on restart)' }
        : await createNodeState({
            stateFile,
            redisUrl,
            redisUnsafe: redisUnsafe(env['RELAY_REDIS_UNSAFE']),
            sqliteDriver: sqliteDriverChoice(env),
            platformRate: config.platformRate,
            log: (message) => console.log(`cdp-edge relay: ${message}`),
          });
  const { store, limiter, description } = state;
  // The store is closed with the relay only when the relay opened it.
  const close = options.store !== undefined ? async () => {} : 'close' in state ? state.close : () => store.close();
  return {
    store,
    limiter,
    outbox: options.outbox ?? ('outbox' in state ? state.outbox : createMemoryOutbox()),
    pacer: options.pacer ?? ('pacer' in state ? state.pacer : createMemoryPacer(config.platformRate, CATCH_UP_MS)),
    description,
    close,
  };
}
