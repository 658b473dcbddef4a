/**
 * The relay's state in Redis or Valkey (ioredis, loaded only when used): every Node relay that
 * names the same `RELAY_REDIS_URL` shares leases, forwarded ids, rate-limit buckets and counters.
 * Each claim, settle, add and limit is one Lua script, so it is atomic across relays; expiry is
 * Redis's own (leases `PX`, forwarded ids `PXAT` their end, buckets once full again), and so is
 * time: a bucket refills, and a forwarded id's window ends, by Redis's clock (redis-time.ts).
 *
 * While Redis is unreachable, calls fail at once (no offline queue) and the relay answers 503 with
 * `Retry-After`, so the browser keeps its items; the client reconnects by itself.
 * @module
 */
import type { Redis, RedisOptions } from 'ioredis';
import type { LimitDecision, RateLimiter } from '../core/limits.js';
import type { Claim, RelayStore } from './store.js';
import { loadOptional } from './optional.js';
import { checkRedisPersistence } from './redis-persistence.js';
import { NOW, type RedisTimeOptions, redisTime } from './redis-time.js';

/** KEYS: one per id. ARGV: lease ms. Returns per id 0 = leased now, 1 = forwarded, 2 = leased by another request. */
const CLAIM = `
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('SET', key, 'l', 'NX', 'PX', ARGV[1]) then out[i] = 0
  elseif redis.call('GET', key) == 'f' then out[i] = 1
  else out[i] = 2 end
end
return out`;

/** KEYS: forwarded ids then released ids. ARGV: how many are forwarded, now, their window's end as ms from now. */
const SETTLE = `${NOW(2)}
local forwarded = tonumber(ARGV[1])
local untilMs = string.format('%d', now + tonumber(ARGV[3]))
for i, key in ipairs(KEYS) do
  if i <= forwarded then redis.call('SET', key, 'f', 'PXAT', untilMs)
  elseif redis.call('GET', key) == 'l' then redis.call('DEL', key) end
end
return 0`;

/** KEYS: the counter. ARGV: amount, limit, ms to keep it. Returns how much was added. */
const ADD = `
local value = tonumber(redis.call('GET', KEYS[1]) or '0')
local added = math.max(0, math.min(tonumber(ARGV[1]), tonumber(ARGV[2]) - value))
if added > 0 then redis.call('INCRBY', KEYS[1], added) end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return added`;

/**
 * KEYS: the bucket. ARGV: per second, burst, now, queue ms, and optionally a charge (limits.ts
 * `refill`: the same arithmetic). Returns {ok 0|1, retry after ms, delay ms}.
 */
const LIMIT = `${NOW(3)}
local rate, burst, queue, charge = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[5])
local bucket = redis.call('HMGET', KEYS[1], 't', 'a')
local tokens = tonumber(bucket[1]) or burst
local at = tonumber(bucket[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) / 1000 * rate)
local ok, wait, delay = 0, 0, 0
if charge then
  tokens = math.max(-burst, math.min(burst, tokens - charge))
  if (charge == 0 and tokens >= 1) or (charge ~= 0 and tokens >= 0) then ok = 1 end
  if tokens < 1 then wait = math.ceil((1 - tokens) / rate * 1000) end
elseif tokens >= 1 then tokens = tokens - 1; ok = 1
else
  delay = math.ceil((1 - tokens) / rate * 1000)
  if delay <= queue then tokens = tokens - 1; ok = 1 else wait = delay - queue; delay = 0 end
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'a', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(2 * burst / rate * 1000) + queue + 1000)
return {ok, wait, delay}`;

/**
 * KEYS: the buckets a request takes from. ARGV: now, then per bucket its per second, burst and
 * queue ms. Takes one token from every bucket, or, when one of them refuses, from none (limits.ts
 * `limitAll`). Returns {ok 0|1, the longest retry after ms of those that refuse, the longest delay ms}.
 */
const LIMIT_ALL = `${NOW(1)}
local left, ok, wait, delay = {}, 1, 0, 0
for i, key in ipairs(KEYS) do
  local rate, burst, queue = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  local bucket = redis.call('HMGET', key, 't', 'a')
  local tokens = math.min(burst, (tonumber(bucket[1]) or burst) + math.max(0, now - (tonumber(bucket[2]) or now)) / 1000 * rate)
  if tokens < 1 then
    local due = math.ceil((1 - tokens) / rate * 1000)
    if due <= queue then delay = math.max(delay, due) else ok = 0; wait = math.max(wait, due - queue) end
  end
  left[i] = tokens - 1
end
if ok == 0 then return {0, wait, 0} end
for i, key in ipairs(KEYS) do
  local rate, burst, queue = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  redis.call('HSET', key, 't', tostring(left[i]), 'a', tostring(now))
  redis.call('PEXPIRE', key, math.ceil(2 * burst / rate * 1000) + queue + 1000)
end
return {1, 0, delay}`;

interface Scripts {
  cdpClaim(...args: (string | number)[]): Promise<number[]>;
  cdpSettle(...args: (string | number)[]): Promise<number>;
  cdpAdd(...args: (string | number)[]): Promise<number>;
  cdpLimit(...args: (string | number)[]): Promise<[number, number, number]>;
  cdpLimitAll(...args: (string | number)[]): Promise<[number, number, number]>;
}

export interface RedisStateOptions extends RedisTimeOptions {
  /** prefix of every key @default 'cdp-edge:' */
  prefix?: string;
  /** ms a command may take before it fails @default 2000 */
  commandTimeoutMs?: number;
  /**
   * Check at connect that Redis keeps what the relay accepts (redis-persistence.ts): reject naming
   * each wrong setting, or with `unsafe` tell `warn` and go on. Unchecked when absent.
   */
  persistence?: { unsafe: boolean; warn: (message: string) => void };
}

export interface RedisState {
  store: RelayStore;
  limiter: RateLimiter;
}

/** A bucket script's answer as a decision. */
const decision = ([ok, wait, delay]: [number, number, number]): LimitDecision => ({
  ok: ok === 1,
  retryAfterMs: Number(wait),
  ...(Number(delay) > 0 ? { delayMs: Number(delay) } : {}),
});

/** Counters (monthly budgets) are kept a little over two months. */
const COUNTER_KEEP_MS = 70 * 24 * 3600_000;
/** Lua numbers are doubles: "no limit" travels as the largest safe integer. */
const finite = (limit: number) => (Number.isFinite(limit) ? limit : Number.MAX_SAFE_INTEGER);

/**
 * Connects to `url` (`redis://` or `rediss://`) as every store here does: no offline queue (calls
 * fail at once while Redis is away), a command timeout, reconnection for ever. Resolves once
 * connected, or rejects naming the address.
 */
export async function connectRedis(url: string, options: RedisStateOptions, scripts: Record<string, { lua: string; numberOfKeys?: number }>): Promise<Redis> {
  const { Redis: RedisClient } = await loadOptional<{ Redis: new (url: string, options: RedisOptions) => Redis }>(
    'ioredis',
    'the Redis state store (RELAY_REDIS_URL)',
  );
  const redis = new RedisClient(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: options.commandTimeoutMs ?? 2000,
    connectTimeout: 5000,
    // Reconnect for ever, at most every 2 s: the relay answers 503 meanwhile.
    retryStrategy: (attempt) => Math.min(2000, 50 * attempt),
  });
  // Connection errors surface through failed calls (503 + Retry-After); an unhandled 'error' event would crash the process.
  redis.on('error', () => {});
  for (const [name, definition] of Object.entries(scripts)) redis.defineCommand(name, definition);
  try {
    await redis.connect();
  } catch (cause) {
    redis.disconnect();
    throw new Error(`RELAY_REDIS_URL: could not connect to ${new URL(url).host} (${(cause as Error).message})`, { cause });
  }
  return redis;
}

/** Connects to `url` (`redis://` or `rediss://`); resolves once connected, or rejects naming the address. */
export async function createRedisState(url: string, options: RedisStateOptions = {}): Promise<RedisState> {
  const prefix = options.prefix ?? 'cdp-edge:';
  const redis = await connectRedis(url, options, {
    cdpClaim: { lua: CLAIM },
    cdpSettle: { lua: SETTLE },
    cdpAdd: { lua: ADD, numberOfKeys: 1 },
    cdpLimit: { lua: LIMIT, numberOfKeys: 1 },
    cdpLimitAll: { lua: LIMIT_ALL },
  });
  if (options.persistence !== undefined) {
    const { unsafe, warn } = options.persistence;
    await checkRedisPersistence(redis, new URL(url).host, unsafe, warn).catch((error: unknown) => {
      redis.disconnect();
      throw error;
    });
  }
  const scripts = redis as unknown as Scripts;
  const { at, time } = redisTime(options);
  const itemKey = (site: string, id: string) => `${prefix}i:${site}:${id}`;

  const store: RelayStore = {
    async claim({ site }, ids, _now, leaseMs) {
      const claim: Claim = { fresh: [], duplicate: [], busy: [] };
      if (ids.length === 0) return claim;
      const states = await scripts.cdpClaim(ids.length, ...ids.map((id) => itemKey(site, id)), Math.max(1, Math.round(leaseMs)));
      ids.forEach((id, i) => {
        (states[i] === 0 ? claim.fresh : states[i] === 1 ? claim.duplicate : claim.busy).push(id);
      });
      return claim;
    },
    async settle({ site }, { forwarded, until, released }) {
      const keys = [...forwarded, ...released].map((id) => itemKey(site, id));
      if (forwarded.length > 0 && !Number.isFinite(until)) throw new RangeError(`settle: until must be a time in ms, not ${until}`);
      if (keys.length > 0) await scripts.cdpSettle(keys.length, ...keys, forwarded.length, ...time(until));
    },
    async add(site, name, amount, limit) {
      return Number(await scripts.cdpAdd(`${prefix}c:${site}:${name}`, amount, finite(limit), COUNTER_KEEP_MS));
    },
    async ping() {
      await redis.ping();
    },
    // Counting keys in a shared Redis means a SCAN of everything: not for a gauge.
    async stats() {
      return undefined;
    },
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
  const limiter: RateLimiter = {
    async limit(key, rate, now, charge) {
      const args = [`${prefix}b:${key}`, rate.perSecond, rate.burst, at(now), rate.queueMs ?? 0, ...(charge === undefined ? [] : [charge])];
      return decision(await scripts.cdpLimit(...args));
    },
    async limitAll(asks, now) {
      if (asks.length === 0) return { ok: true, retryAfterMs: 0 };
      const rates = asks.flatMap(({ rate }) => [rate.perSecond, rate.burst, rate.queueMs ?? 0]);
      return decision(await scripts.cdpLimitAll(asks.length, ...asks.map(({ key }) => `${prefix}b:${key}`), at(now), ...rates));
    },
  };
  return { store, limiter };
}
