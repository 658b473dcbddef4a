/**
 * The Lua helpers every script of the Redis outbox that moves entries shares
 * (redis-outbox-lua.ts has the scripts and the key layout): an entry begins or stops waiting in
 * its lane, its site's count and, for a merge, its browser's merges; it is placed (ready, waiting
 * until a time, or held behind a merge of its browser, as the SQL outbox's sql-ready.ts); a merge
 * that leaves frees what it held; an entry's keys go; a dead letter's indexes go; remembered ids
 * whose second has ended are uncounted.
 * @module
 */
export const COMMON = `
local P = ARGV[1]
local function siteOf(lane) return string.match(lane, '^(%d+):') end
-- An HSET or ZADD of one pair, run now, or gathered in \`later\` (an accept's) to run with the key's others.
local function write(later, command, key, a, b)
  if not later then return redis.call(command, key, a, b) end
  local each = later.args[key]
  if not each then
    each = {}
    later.args[key], later.keys[#later.keys + 1], later.commands[key] = each, key, command
  end
  each[#each + 1], each[#each + 2] = a, b
end
-- What was gathered, one command a key per thousand pairs (Lua's unpack has a limit).
local function writeGathered(later)
  for _, key in ipairs(later.keys) do
    local each = later.args[key]
    for i = 1, #each, 2000 do redis.call(later.commands[key], key, unpack(each, i, math.min(i + 1999, #each))) end
  end
end
local function browserOf(seq) return redis.call('HGET', P..'o:ab', seq) or redis.call('HGET', P..'o:mb', seq) end
-- Whether a merge of the browser before seq is in the outbox, other than those taken (identify before track, merges in order).
local function behindMerge(seq, browser, taken)
  if not browser then return false end
  local before = redis.call('ZREVRANGEBYSCORE', P..'o:mq:'..browser, '('..seq, '-inf', 'LIMIT', 0, 1)[1]
  if before == nil then return false end
  return redis.call('HGET', P..'o:ab', seq) ~= false or not (taken and taken[before])
end
-- Ready: in its lane, and the lane and its site among those with some, in the order they began waiting.
-- \`done\`, when given, names the lanes this script already made ready: their site's indexes have them.
local function toReady(seq, lane, done, later)
  write(later, 'ZADD', P..'o:r:'..lane, seq, seq)
  if done then
    if done[lane] then return end
    done[lane] = true
  end
  local s = siteOf(lane)
  if redis.call('ZSCORE', P..'o:rl:'..s, lane) then return end
  redis.call('ZADD', P..'o:rl:'..s, redis.call('ZSCORE', P..'o:lv:'..s, lane) or 0, lane)
  if not redis.call('ZSCORE', P..'o:rs', s) then redis.call('ZADD', P..'o:rs', redis.call('ZSCORE', P..'o:ls', s) or 0, s) end
end
-- Ready, or held behind a merge of its browser.
local function place(seq, lane)
  local browser = browserOf(seq)
  if behindMerge(seq, browser) then redis.call('ZADD', P..'o:h:'..browser, seq, seq) else toReady(seq, lane) end
end
-- A lane with nothing ready leaves its site's turns, a site with no such lane the sites'.
local function tidy(lane)
  if redis.call('EXISTS', P..'o:r:'..lane) == 1 then return false end
  local s = siteOf(lane)
  redis.call('ZREM', P..'o:rl:'..s, lane)
  if redis.call('EXISTS', P..'o:rl:'..s) == 0 then redis.call('ZREM', P..'o:rs', s) end
  return true
end
local function unplace(seq, lane)
  redis.call('ZREM', P..'o:wait', seq)
  if redis.call('ZREM', P..'o:r:'..lane, seq) == 1 then tidy(lane) end
  local browser = browserOf(seq)
  if browser then redis.call('ZREM', P..'o:h:'..browser, seq) end
end
-- A merge of the browser left the outbox: what it held, up to the next one, is ready.
local function free(browser)
  local first = redis.call('ZRANGE', P..'o:mq:'..browser, 0, 0)[1]
  local held = P..'o:h:'..browser
  for _, seq in ipairs(redis.call('ZRANGEBYSCORE', held, '-inf', first or '+inf')) do
    redis.call('ZREM', held, seq)
    toReady(seq, redis.call('HGET', P..'o:lane', seq))
  end
end
-- Waiting in its lane and, a merge (\`merge\`: its browser), among its browser's merges; not counted nor placed.
-- An accept passes \`fresh\`: whether the lane is new to it (else the site's lanes have it), and
-- \`later\`, where it gathers the writes no one reads before the script ends.
local function inLane(seq, lane, merge, fresh, later)
  if merge then redis.call('ZADD', P..'o:mq:'..merge, seq, seq) end
  write(later, 'HSET', P..'o:lane', seq, lane)
  write(later, 'ZADD', P..'o:q:'..lane, seq, seq)
  if fresh ~= false then redis.call('ZADD', P..'o:lv:'..siteOf(lane), 'NX', seq, lane) end
end
-- Counted as waiting in its lane, site and the outbox, and placed: waiting until untilMs when given, else ready or held.
local function addWaiting(seq, lane, untilMs)
  local s = siteOf(lane)
  inLane(seq, lane, redis.call('HGET', P..'o:mb', seq))
  if redis.call('HINCRBY', P..'o:ps', s, 1) == 1 then redis.call('ZADD', P..'o:ls', 'NX', seq, s) end
  redis.call('HINCRBY', P..'o:meta', 'pending', 1)
  if untilMs then redis.call('ZADD', P..'o:wait', untilMs, seq) else place(seq, lane) end
end
local function removeWaiting(seq)
  local lane = redis.call('HGET', P..'o:lane', seq)
  local s = siteOf(lane)
  unplace(seq, lane)
  local merge = redis.call('HGET', P..'o:mb', seq)
  if merge and redis.call('ZREM', P..'o:mq:'..merge, seq) == 1 then free(merge) end
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
