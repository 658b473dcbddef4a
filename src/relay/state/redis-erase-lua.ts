/**
 * The Lua scripts of erasure in the Redis outbox (redis-outbox.ts; key layout in
 * redis-outbox-lua.ts): dropping the entries and dead letters an erasure named, and the
 * suppression list, `x` (members `<site>\0<hash>`, scored by when they end on Redis's clock).
 * @module
 */
import { COMMON } from './redis-outbox-entries.js';
import { NOW } from './redis-time.js';

/**
 * ARGV: prefix, now, then seqs (found by the caller's scan of `o:items`). Drops each that is a dead
 * letter, or waiting and not under a live lease; one under a live lease is left and counted.
 * Returns {waiting, dead, in flight}.
 */
export const ERASE = `${COMMON}${NOW(2)}
local waiting, dead, inFlight = 0, 0, 0
for i = 3, #ARGV do
  local seq = ARGV[i]
  if redis.call('ZSCORE', P..'o:dead', seq) then
    dropDead(seq)
    dropItem(seq)
    dead = dead + 1
  elseif redis.call('HEXISTS', P..'o:lane', seq) == 1 then
    local leasedTill = tonumber(redis.call('ZSCORE', P..'o:wait', seq) or '0')
    if redis.call('HEXISTS', P..'o:owner', seq) == 1 and leasedTill > now then
      inFlight = inFlight + 1
    else
      redis.call('HDEL', P..'o:owner', seq)
      redis.call('HDEL', P..'o:attempts', seq)
      removeWaiting(seq)
      dropItem(seq)
      waiting = waiting + 1
    end
  end
end
return {waiting, dead, inFlight}`;

/** ARGV: prefix, now, ms the rows last from now, then members. Forgets the rows ended; a later end of a row kept wins. */
export const SUPPRESS = `${NOW(2)}
local P, key = ARGV[1], ARGV[1]..'x'
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
for i = 4, #ARGV do redis.call('ZADD', key, 'GT', now + tonumber(ARGV[3]), ARGV[i]) end
-- The list goes by itself once its last row has ended.
local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
if last then redis.call('PEXPIREAT', key, string.format('%d', tonumber(last))) end
return 0`;

/** ARGV: prefix, now. Forgets the rows ended; returns the members in force. */
export const SUPPRESSED = `${NOW(2)}
redis.call('ZREMRANGEBYSCORE', ARGV[1]..'x', '-inf', now)
return redis.call('ZRANGEBYSCORE', ARGV[1]..'x', '(' .. now, '+inf')`;
