/**
 * The Lua helpers every script of the Redis outbox that moves entries shares
 * (redis-outbox-lua.ts has the scripts and the key layout): an entry begins or stops waiting in
 * its lane, its site's count and, for a merge, its browser's merges; an entry's keys go; a dead
 * letter's indexes go; remembered ids whose second has ended are uncounted.
 * @module
 */
export const COMMON = `
local P = ARGV[1]
local function siteOf(lane) return string.match(lane, '^(%d+):') end
local function addWaiting(seq, lane)
  local s = siteOf(lane)
  local merge = redis.call('HGET', P..'o:mb', seq)
  if merge then redis.call('ZADD', P..'o:mq:'..merge, seq, seq) end
  redis.call('HSET', P..'o:lane', seq, lane)
  redis.call('ZADD', P..'o:q:'..lane, seq, seq)
  redis.call('ZADD', P..'o:lv:'..s, 'NX', seq, lane)
  if redis.call('HINCRBY', P..'o:ps', s, 1) == 1 then redis.call('ZADD', P..'o:ls', 'NX', seq, s) end
  redis.call('HINCRBY', P..'o:meta', 'pending', 1)
end
local function removeWaiting(seq)
  local lane = redis.call('HGET', P..'o:lane', seq)
  local s = siteOf(lane)
  local merge = redis.call('HGET', P..'o:mb', seq)
  if merge then redis.call('ZREM', P..'o:mq:'..merge, seq) end
  redis.call('ZREM', P..'o:wait', seq)
  redis.call('ZREM', P..'o:q:'..lane, seq)
  if redis.call('ZCARD', P..'o:q:'..lane) == 0 then redis.call('ZREM', P..'o:lv:'..s, lane) end
  if redis.call('HINCRBY', P..'o:ps', s, -1) <= 0 then
    redis.call('HDEL', P..'o:ps', s)
    redis.call('ZREM', P..'o:ls', s)
  end
  redis.call('HINCRBY', P..'o:meta', 'pending', -1)
  return s
end
local function dropItem(seq)
  redis.call('HDEL', P..'o:items', seq)
  redis.call('HDEL', P..'o:lane', seq)
  redis.call('HDEL', P..'o:mb', seq)
  redis.call('HDEL', P..'o:ab', seq)
end
local function dropDead(seq)
  local lane = redis.call('HGET', P..'o:lane', seq)
  redis.call('ZREM', P..'o:dead', seq)
  redis.call('ZREM', P..'o:deadt', seq)
  if lane then redis.call('ZREM', P..'o:ds:'..siteOf(lane), seq) end
  redis.call('HDEL', P..'o:why', seq)
end
local function forget(second)
  local ended = redis.call('ZRANGEBYSCORE', P..'o:n', '-inf', second, 'LIMIT', 0, 100)
  for _, bucket in ipairs(ended) do
    redis.call('HINCRBY', P..'o:meta', 'remembered', -tonumber(redis.call('HGET', P..'o:nc', bucket) or '0'))
    redis.call('HDEL', P..'o:nc', bucket)
    redis.call('ZREM', P..'o:n', bucket)
  end
end`;
