/**
 * The Redis outbox's accept (redis-outbox.ts; redis-outbox-lua.ts has the other scripts and the
 * key layout). One script takes a batch in two steps: it first decides each item (duplicate, full
 * or accepted), keeping the counts the limits read in Lua for the batch, then writes the accepted
 * ones, with what it knows of each (its kind, browser, lane) rather than reading it back, and sets
 * the hashes' fields together: a few commands an item (about 4, from 17 when each item counted
 * and read back its own).
 * @module
 */
import { COMMON } from './redis-outbox-entries.js';
import { NOW } from './redis-time.js';

/**
 * ARGV: prefix, now, window ms, limits (visitor, site, total, dead), dead slice, then per item:
 * site, 16-byte id, visitor, 'm' (a merge) or 'a' (an activity), browser, item JSON. Returns per
 * item 1 (accepted), 0 (duplicate) or 2 (full).
 */
export const ACCEPT = `${COMMON}${NOW(2)}
local window, capVisitor, capSite, capTotal, capDead, slice = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local untilMs = now + window
local bucket = math.ceil(untilMs / 1000)
forget(math.floor(now / 1000))
-- Dead letters whose window ended, then the oldest over the limit: a slice of each, counted.
local expired = redis.call('ZRANGEBYSCORE', P..'o:deadt', '-inf', now - window, 'LIMIT', 0, slice)
for _, seq in ipairs(expired) do dropDead(seq); dropItem(seq) end
if #expired > 0 then redis.call('HINCRBY', P..'o:meta', 'expired', #expired) end
local over = math.min(redis.call('ZCARD', P..'o:dead') - capDead, slice)
if over > 0 then
  for _, seq in ipairs(redis.call('ZRANGE', P..'o:dead', 0, over - 1)) do dropDead(seq); dropItem(seq) end
  redis.call('HINCRBY', P..'o:meta', 'cut', over)
end
-- First what each item is: a duplicate (remembered, or earlier in this batch), full, or accepted. The
-- counts the limits read are kept here for the batch (per site, per lane) and written once.
local sites, out, taken, accepted = {}, {}, {}, {}
local pending = tonumber(redis.call('HGET', P..'o:meta', 'pending') or '0')
local siteWaiting, laneWaiting = {}, {}
for i = 9, #ARGV, 6 do
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
  local lane = n..':'..ARGV[i + 2]
  if taken[key] or redis.call('PEXPIRETIME', key) > now then
    out[#out + 1] = 0
  else
    siteWaiting[n] = siteWaiting[n] or tonumber(redis.call('HGET', P..'o:ps', n) or '0')
    laneWaiting[lane] = laneWaiting[lane] or redis.call('ZCARD', P..'o:q:'..lane)
    if pending >= capTotal or siteWaiting[n] >= capSite or laneWaiting[lane] >= capVisitor then
      out[#out + 1] = 2
    else
      taken[key] = true
      -- The site begins waiting at this entry when it had none.
      accepted[#accepted + 1] = {i = i, key = key, n = n, lane = lane, siteBegins = siteWaiting[n] == 0}
      pending, siteWaiting[n], laneWaiting[lane] = pending + 1, siteWaiting[n] + 1, laneWaiting[lane] + 1
      out[#out + 1] = 1
    end
  end
end
-- Then the accepted, with seqs reserved together: each newer than any in the outbox, so an item is
-- behind a merge of its browser exactly when the browser has one in the outbox, or earlier here.
local added = #accepted
local seq = added > 0 and redis.call('HINCRBY', P..'o:meta', 'seq', added) - added or 0
-- The writes to each hash and to each lane's and browser's sets go together, after (nothing here reads them).
local merged, ready, counted, entered = {}, {}, {}, {}
local later = {args = {}, keys = {}, commands = {}}
for _, a in ipairs(accepted) do
  seq = seq + 1
  local i, n, lane = a.i, a.n, a.lane
  local browser, merge = n..':'..ARGV[i + 4], ARGV[i + 3] == 'm'
  redis.call('SET', a.key, 1, 'PXAT', string.format('%d', untilMs))
  write(later, 'HSET', P..'o:items', seq, ARGV[i + 5])
  write(later, 'HSET', P..(merge and 'o:mb' or 'o:ab'), seq, browser)
  if merged[browser] == nil then merged[browser] = redis.call('EXISTS', P..'o:mq:'..browser) == 1 end
  -- Its site's and lane's waiting begin before it is placed: a site or lane made ready is scored by when it began.
  if a.siteBegins then redis.call('ZADD', P..'o:ls', 'NX', seq, n) end
  inLane(seq, lane, merge and browser or nil, not entered[lane], later)
  entered[lane] = true
  if merged[browser] then write(later, 'ZADD', P..'o:h:'..browser, seq, seq) else toReady(seq, lane, ready, later) end
  if merge then merged[browser] = true end
  counted[n] = (counted[n] or 0) + 1
end
writeGathered(later)
for n, count in pairs(counted) do redis.call('HINCRBY', P..'o:ps', n, count) end
if added > 0 then
  redis.call('HINCRBY', P..'o:meta', 'pending', added)
  redis.call('ZADD', P..'o:n', bucket, bucket)
  redis.call('HINCRBY', P..'o:nc', bucket, added)
  redis.call('HINCRBY', P..'o:meta', 'remembered', added)
end
return out`;
