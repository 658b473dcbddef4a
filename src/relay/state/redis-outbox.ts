/**
 * The outbox and pacer in Redis or Valkey (ioredis): every relay process naming the same
 * `RELAY_REDIS_URL` shares one outbox, one deliverer lock and one platform budget. Each method is
 * one Lua script, so it is atomic across processes.
 *
 * Keys (after the prefix):
 * - `d:<site n>:<16 bytes>`: a remembered id (state/ids.ts), value `1`, expiring (`PXAT`) when
 *   its window ends: Redis forgets it by itself, so memory follows the window. A script reads the
 *   expiry time (`PEXPIRETIME`, Redis 7) and compares it with the caller's time, on Redis's clock;
 * - `o:sites` (site → n), `o:meta` (seq and site counters);
 * - `o:items` (seq → item JSON), `o:attempts`, `o:owner` (hashes by seq);
 * - `o:ready` (sorted set of seqs ready now, by seq), `o:wait` (seqs leased or released until a
 *   time, by that time): a lease first moves what has come due from `o:wait` to `o:ready`;
 * - `o:dead` (sorted set of dead seqs), `o:why` (seq → {reason, status, failed});
 * - `o:lead`: the deliverer's lock, the owner's name, expiring (`PXAT`) at the end of its term;
 * - `o:pacer`: the GCRA state {tat, hold};
 * - `o:n` / `o:nc`: the gauge of remembered ids, counted by the second their memory ends (so
 *   `stats().remembered` never scans keys).
 *
 * The scripts touch keys built from the prefix, so the outbox needs one Redis, not a cluster.
 * Connecting moves the previous release's remembered ids into `d:` keys, once (redis-upgrade.ts);
 * times arrive on Redis's clock (redis-time.ts), so relays with skewed clocks share one pace.
 * @module
 */
import { Buffer } from 'node:buffer';
import { compactId } from './ids.js';
import { paceInterval } from './pace.js';
import type { DeadLetter, Leased, OutboxItem, OutboxStore } from './outbox.js';
import { systemClock, type Clock } from '../core/clock.js';
import { connectRedis, type RedisStateOptions } from './redis.js';
import { onRedisTime, redisTime } from './redis-time.js';
import { importPreviousIds } from './redis-upgrade.js';

/** Drops the gauge's buckets that ended by `now` (seconds). Shared head of ACCEPT and STATS. */
const FORGET = `
local function forget(P, second)
  local ended = redis.call('ZRANGEBYSCORE', P..'o:n', '-inf', second)
  for _, bucket in ipairs(ended) do
    redis.call('HINCRBY', P..'o:meta', 'remembered', -tonumber(redis.call('HGET', P..'o:nc', bucket) or '0'))
    redis.call('HDEL', P..'o:nc', bucket)
  end
  if #ended > 0 then redis.call('ZREMRANGEBYSCORE', P..'o:n', '-inf', second) end
end`;

/** ARGV: prefix, now, window ms, then per item: site, 16-byte id, item JSON. Returns 1 (accepted) or 0 (duplicate) per item. */
const ACCEPT = `${FORGET}
local P, now, window = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local untilMs = now + window
local bucket = math.ceil(untilMs / 1000)
forget(P, math.floor(now / 1000))
local sites, out, added = {}, {}, 0
for i = 4, #ARGV, 3 do
  local site = ARGV[i]
  local n = sites[site]
  if not n then
    n = redis.call('HGET', P..'o:sites', site)
    if not n then
      n = redis.call('HINCRBY', P..'o:meta', 'sites', 1)
      redis.call('HSET', P..'o:sites', site, n)
    end
    sites[site] = n
  end
  local key = P..'d:'..n..':'..ARGV[i + 1]
  if redis.call('PEXPIRETIME', key) > now then
    out[#out + 1] = 0
  else
    redis.call('SET', key, 1, 'PXAT', string.format('%d', untilMs))
    local seq = redis.call('HINCRBY', P..'o:meta', 'seq', 1)
    redis.call('HSET', P..'o:items', seq, ARGV[i + 2])
    redis.call('ZADD', P..'o:ready', seq, seq)
    added = added + 1
    out[#out + 1] = 1
  end
end
if added > 0 then
  redis.call('ZADD', P..'o:n', bucket, bucket)
  redis.call('HINCRBY', P..'o:nc', bucket, added)
  redis.call('HINCRBY', P..'o:meta', 'remembered', added)
end
return out`;

/** ARGV: prefix, owner, now, lease ms, max. Returns {seq, item JSON, attempts} per leased entry, by seq. */
const LEASE = `
local P, owner, now, leaseMs, max = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local due = redis.call('ZRANGEBYSCORE', P..'o:wait', '-inf', now)
for _, seq in ipairs(due) do redis.call('ZADD', P..'o:ready', seq, seq) end
if #due > 0 then redis.call('ZREMRANGEBYSCORE', P..'o:wait', '-inf', now) end
local seqs = redis.call('ZRANGE', P..'o:ready', 0, max - 1)
local out = {}
for _, seq in ipairs(seqs) do
  local attempts = tonumber(redis.call('HGET', P..'o:attempts', seq) or '0')
  redis.call('HSET', P..'o:owner', seq, owner)
  redis.call('ZREM', P..'o:ready', seq)
  redis.call('ZADD', P..'o:wait', now + leaseMs, seq)
  out[#out + 1] = {seq, redis.call('HGET', P..'o:items', seq), attempts}
end
return out`;

/** ARGV: prefix, owner, now, then seqs. Counts a started send on each under owner's live lease; returns the seqs marked. */
const SENDING = `
local P, owner, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local out = {}
for i = 4, #ARGV do
  local seq = ARGV[i]
  local leasedTill = tonumber(redis.call('ZSCORE', P..'o:wait', seq) or '0')
  if redis.call('HGET', P..'o:owner', seq) == owner and leasedTill > now then
    redis.call('HINCRBY', P..'o:attempts', seq, 1)
    out[#out + 1] = tonumber(seq)
  end
end
return out`;

/** ARGV: prefix, owner, now, settlement JSON {delivered, released, dead}. Returns how many were skipped. */
const SETTLE = `
local P, owner, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local s = cjson.decode(ARGV[4])
local skipped = 0
local function take(seq)
  seq = tostring(seq)
  if redis.call('HGET', P..'o:owner', seq) ~= owner then
    skipped = skipped + 1
    return nil
  end
  redis.call('HDEL', P..'o:owner', seq)
  redis.call('ZREM', P..'o:ready', seq)
  redis.call('ZREM', P..'o:wait', seq)
  return seq
end
for _, seq in ipairs(s.delivered) do
  seq = take(seq)
  if seq then redis.call('HDEL', P..'o:items', seq); redis.call('HDEL', P..'o:attempts', seq) end
end
for _, r in ipairs(s.released) do
  local seq = take(r.seq)
  if seq then redis.call('HDEL', P..'o:attempts', seq); redis.call('ZADD', P..'o:wait', r.notBefore, seq) end
end
for _, d in ipairs(s.dead) do
  local seq = take(d.seq)
  if seq then
    redis.call('HDEL', P..'o:attempts', seq)
    redis.call('ZADD', P..'o:dead', seq, seq)
    redis.call('HSET', P..'o:why', seq, cjson.encode({reason = d.reason, status = d.status, failed = now}))
  end
end
return skipped`;

/** ARGV: prefix, seqs JSON (or "all"), now, drop (1) or retry (0). Returns how many. */
const DEAD = `
local P, now, drop = ARGV[1], tonumber(ARGV[3]), ARGV[4] == '1'
local seqs = ARGV[2] == 'all' and redis.call('ZRANGE', P..'o:dead', 0, -1) or cjson.decode(ARGV[2])
local count = 0
for _, seq in ipairs(seqs) do
  seq = tostring(seq)
  if redis.call('ZREM', P..'o:dead', seq) == 1 then
    count = count + 1
    redis.call('HDEL', P..'o:why', seq)
    if drop then redis.call('HDEL', P..'o:items', seq) else redis.call('ZADD', P..'o:wait', now, seq) end
  end
end
return count`;

/** ARGV: prefix. Returns {seq, item JSON, why JSON} per dead letter, by seq. */
const DEAD_LIST = `
local P = ARGV[1]
local out = {}
for _, seq in ipairs(redis.call('ZRANGE', P..'o:dead', 0, -1)) do
  out[#out + 1] = {seq, redis.call('HGET', P..'o:items', seq), redis.call('HGET', P..'o:why', seq)}
end
return out`;

/** ARGV: prefix, owner, now, ttl ms. Returns 1 when `owner` leads. */
const LEAD = `
local key, owner, now = ARGV[1]..'o:lead', ARGV[2], tonumber(ARGV[3])
local holder = redis.call('GET', key)
if holder and holder ~= owner and redis.call('PEXPIRETIME', key) > now then return 0 end
redis.call('SET', key, owner, 'PXAT', string.format('%d', now + tonumber(ARGV[4])))
return 1`;

/** ARGV: prefix, now, 'proxy' | 'deliver' | 'hold', interval ms (or the hold's end). Returns ms to wait (0 = granted). */
const PACE = `
local key, now, what, x = ARGV[1]..'o:pacer', tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local tat = tonumber(redis.call('HGET', key, 'tat') or '0')
local hold = tonumber(redis.call('HGET', key, 'hold') or '0')
if what == 'hold' then
  if x > hold then redis.call('HSET', key, 'hold', string.format('%d', x)) end
  return 0
end
if now < hold then return math.ceil(hold - now) end
if what == 'deliver' and tat > now then return math.ceil(tat - now) end
redis.call('HSET', key, 'tat', string.format('%.3f', math.max(tat, now) + x))
return 0`;

/** ARGV: prefix, now. Returns {pending, dead, remembered}. */
const STATS = `${FORGET}
local P = ARGV[1]
forget(P, math.floor(tonumber(ARGV[2]) / 1000))
return {redis.call('ZCARD', P..'o:ready') + redis.call('ZCARD', P..'o:wait'), redis.call('ZCARD', P..'o:dead'), tonumber(redis.call('HGET', P..'o:meta', 'remembered') or '0')}`;

type Arg = string | number | Buffer;
interface Scripts {
  cdpOutboxAccept(...args: Arg[]): Promise<number[]>;
  cdpOutboxLease(...args: Arg[]): Promise<[string, string, number][]>;
  cdpOutboxSending(...args: Arg[]): Promise<number[]>;
  cdpOutboxSettle(...args: Arg[]): Promise<number>;
  cdpOutboxDead(...args: Arg[]): Promise<number>;
  cdpOutboxDeadList(...args: Arg[]): Promise<[string, string, string][]>;
  cdpOutboxLead(...args: Arg[]): Promise<number>;
  cdpOutboxPace(...args: Arg[]): Promise<number>;
  cdpOutboxStats(...args: Arg[]): Promise<[number, number, number]>;
}

/** Connects to `url`; resolves once connected, or rejects naming the address. Times go on Redis's clock, measured against `clock`. */
export async function createRedisOutbox(url: string, options: RedisStateOptions & { clock?: Clock } = {}): Promise<OutboxStore> {
  const P = options.prefix ?? 'cdp-edge:';
  const script = (lua: string) => ({ lua, numberOfKeys: 0 });
  const redis = await connectRedis(url, options, {
    cdpOutboxAccept: script(ACCEPT),
    cdpOutboxLease: script(LEASE),
    cdpOutboxSending: script(SENDING),
    cdpOutboxSettle: script(SETTLE),
    cdpOutboxDead: script(DEAD),
    cdpOutboxDeadList: script(DEAD_LIST),
    cdpOutboxLead: script(LEAD),
    cdpOutboxPace: script(PACE),
    cdpOutboxStats: script(STATS),
  });
  const run = redis as unknown as Scripts;
  const [, time] = await Promise.all([importPreviousIds(redis, P), redisTime(redis, options.clock ?? systemClock)]).catch((error: unknown) => {
    redis.disconnect();
    throw error;
  });
  const ms = (time: number) => Math.round(time);

  const store: OutboxStore = {
    outbox: {
      async accept(items, now, windowMs) {
        if (items.length === 0) return { accepted: [], duplicate: [] };
        const args = items.flatMap((item) => [item.site, Buffer.from(compactId(item.id)), JSON.stringify(item)]);
        const flags = await run.cdpOutboxAccept(P, ms(now), ms(windowMs), ...args);
        return {
          accepted: items.filter((_, i) => flags[i] === 1).map((item) => item.id),
          duplicate: items.filter((_, i) => flags[i] !== 1).map((item) => item.id),
        };
      },
      async lease(owner, max, now, leaseMs) {
        if (max <= 0) return [];
        const rows = await run.cdpOutboxLease(P, owner, ms(now), ms(leaseMs), Math.floor(max));
        return rows.map(([seq, item, attempts]): Leased => ({ ...(JSON.parse(item) as OutboxItem), seq: Number(seq), attempts: Number(attempts) }));
      },
      async sending(owner, seqs, now) {
        if (seqs.length === 0) return [];
        const marked = new Set((await run.cdpOutboxSending(P, owner, ms(now), ...new Set(seqs))).map(Number));
        return seqs.filter((seq) => marked.delete(seq));
      },
      async settle(owner, { delivered, released, dead }, now) {
        const skipped = await run.cdpOutboxSettle(P, owner, ms(now), JSON.stringify({ delivered, released, dead }));
        return { skipped: Number(skipped) };
      },
      async lead(owner, now, ttlMs) {
        return (await run.cdpOutboxLead(P, owner, ms(now), ms(ttlMs))) === 1;
      },
      async deadLetters(options = {}) {
        const letters: DeadLetter[] = [];
        for (const [seq, json, whyJson] of await run.cdpOutboxDeadList(P)) {
          const item = JSON.parse(json) as OutboxItem;
          if (options.site !== undefined && item.site !== options.site) continue;
          const why = JSON.parse(whyJson) as { reason: string; status?: number; failed: number };
          letters.push({ ...item, seq: Number(seq), reason: why.reason, ...(why.status === undefined ? {} : { status: why.status }), failed: why.failed });
          if (letters.length === options.limit) break;
        }
        return letters;
      },
      async retryDead(seqs, now) {
        return Number(await run.cdpOutboxDead(P, seqs === undefined ? 'all' : JSON.stringify(seqs), ms(now), 0));
      },
      async dropDead(seqs) {
        return Number(await run.cdpOutboxDead(P, seqs === undefined ? 'all' : JSON.stringify(seqs), 0, 1));
      },
      async stats() {
        const [pending, dead, remembered] = await run.cdpOutboxStats(P, Date.now());
        return { pending: Number(pending), dead: Number(dead), remembered: Number(remembered) };
      },
    },
    pacer(rate) {
      const interval = paceInterval(rate);
      return {
        async take(now, priority) {
          return Number(await run.cdpOutboxPace(P, ms(now), priority, interval));
        },
        async hold(until) {
          await run.cdpOutboxPace(P, 0, 'hold', ms(until));
        },
      };
    },
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
  return onRedisTime(store, time);
}
