/**
 * The Lua scripts of the Redis outbox (redis-outbox.ts), one per method, each touching a bounded
 * number of keys: a batch's items, a lease's entries and lanes, a page of dead letters, a slice of
 * what expired. Key layout (after the prefix):
 * - `d:<site n>:<16 bytes>`: a remembered id, value `1`, expiring (`PXAT`) when its window ends;
 * - `o:sites` (site → n), `o:meta` (counters: seq, sites, pending, expired, cut, remembered);
 * - `o:items` (seq → item JSON), `o:attempts`, `o:owner`, `o:lane` (seq → lane `<site n>:<visitor>`);
 * - `o:q:<lane>`: a visitor's waiting seqs (ready, leased, released or held), by seq; `o:lv:<site n>`:
 *   the site's lanes with entries waiting, by the seq they began waiting at; `o:ls`: the sites with
 *   entries waiting, likewise; `o:ps` (site n → entries waiting): the limits, read in O(1);
 * - where each waiting entry is (one of): `o:r:<lane>` ready now, by seq (`o:rl:<site n>`: the
 *   site's lanes with some, `o:rs`: the sites with some, scored as in `o:lv` and `o:ls`); `o:wait`
 *   leased or released until a time, by that time (a lease moves what has come due to its place);
 *   or `o:h:<browser>` held behind an earlier merge of its browser, by seq;
 * - `o:mb` / `o:ab` (seq → browser `<site n>:<browser>`, for merges / activities) and `o:mq:<browser>`
 *   (the browser's merges in the outbox, by seq): an activity is not leased while its browser has
 *   a merge before it there (identify before track);
 * - `o:dead` (dead seqs, by seq), `o:deadt` (by the time they failed), `o:ds:<site n>` (one
 *   site's), `o:why` (seq → {reason, status, failed});
 * - `o:lead`: the deliverer's lock; `o:pacer`: the GCRA state {tat, hold} and the shared window's calls;
 * - `o:n` / `o:nc`: the gauge of remembered ids, counted by the second their memory ends.
 * The accept's script is in redis-outbox-accept.ts.
 * @module
 */
import { MERGES_PER_LEASE, RUN } from './fair.js';
import { COMMON } from './redis-outbox-entries.js';
import { NOW } from './redis-time.js';

/**
 * ARGV: prefix, owner, now, lease ms, max. First moves what has come due in \`o:wait\` to its place
 * (twice max at most), then takes ready entries in turns, as state/fair.ts: one run per site (the
 * longest-waiting first), each site's turn going to its lanes in turn, each lane in seq order; merges
 * past a call's worth only in a second pass, when the first left room. A browser's next merge held
 * only behind one taken goes too. A site's lanes are read in pages (as state/sql-pick.ts reads them).
 * Returns {seq, item JSON, attempts} per leased entry, by seq.
 */
export const LEASE = `${COMMON}${NOW(3)}
local owner, leaseMs, max = ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[5])
for _, seq in ipairs(redis.call('ZRANGEBYSCORE', P..'o:wait', '-inf', now, 'LIMIT', 0, 2 * max)) do
  redis.call('ZREM', P..'o:wait', seq)
  place(seq, redis.call('HGET', P..'o:lane', seq))
end
local visited, chosen, taken, tookFrom = {}, {}, {}, {}
local mergesTaken, deferred = 0, false
local function take(lane, seq, browser)
  chosen[seq] = true
  -- A merge: the browser's next one, held only behind it, goes next in this lane's turns.
  local merge = browser and redis.call('HGET', P..'o:ab', seq) == false
  if not merge then lane.active = true end
  if merge then
    mergesTaken = mergesTaken + 1
    local after = redis.call('ZRANGEBYSCORE', P..'o:mq:'..browser, '('..seq, '+inf', 'LIMIT', 0, 1)[1]
    if after and redis.call('ZSCORE', P..'o:h:'..browser, after) then lane.chained[#lane.chained + 1] = after end
  end
  return seq
end
local function nextOf(lane, mergesToo)
  local merge = table.remove(lane.chained, 1)
  if merge then
    local browser = browserOf(merge)
    redis.call('ZREM', P..'o:h:'..browser, merge)
    return take(lane, merge, browser)
  end
  while true do
    local seq = redis.call('ZRANGE', P..'o:r:'..lane.lane, 0, 0)[1]
    if not seq then return nil end
    local browser = browserOf(seq)
    -- Merges past a call's worth wait for the second pass (state/fair.ts MERGES_PER_LEASE).
    if not mergesToo and mergesTaken >= ${MERGES_PER_LEASE} and redis.call('HGET', P..'o:ab', seq) == false then
      deferred = true
      return nil
    end
    redis.call('ZREM', P..'o:r:'..lane.lane, seq)
    -- Ready entries are never behind a merge, but a merge retried from the dead letters comes back
    -- before entries made ready without it: such an entry is held again.
    if behindMerge(seq, browser, chosen) then
      redis.call('ZADD', P..'o:h:'..browser, seq, seq)
    else
      return take(lane, seq, browser)
    end
  end
end
local function pass(mergesToo)
  local sites = redis.call('ZRANGE', P..'o:rs', 0, max - 1)
  -- Each site's lanes in pages, as state/fair.ts takes them: an even share of what the lease has left first, the next
  -- when its turns reach the last, until the pass has read twice max (past the bound of merges, lanes answer nothing).
  local made = 0
  local function page(site, n)
    n = math.min(n, 2 * max - made)
    local lanes = n > 0 and redis.call('ZRANGE', P..'o:rl:'..site.site, site.read, site.read + n - 1) or {}
    for _, lane in ipairs(lanes) do
      site.lanes[#site.lanes + 1] = {lane = lane, chained = {}}
      visited[#visited + 1] = lane
    end
    site.read, made, site.open = site.read + #lanes, made + #lanes, n > 0 and #lanes >= n
  end
  local turns = {}
  for _, s in ipairs(sites) do
    local site = {site = s, lanes = {}, next = 1, read = 0}
    page(site, math.ceil(math.max(1, max - #taken) / #sites))
    if #site.lanes > 0 then turns[#turns + 1] = site end
  end
  while #taken < max and #turns > 0 do
    local t = 1
    while t <= #turns and #taken < max do
      local site = turns[t]
      local seq = nil
      while not seq do
        if site.next > #site.lanes then
          if site.open then page(site, math.ceil((max - #taken) / #turns)) end
          if site.next > #site.lanes then site.next = 1 end
          if #site.lanes == 0 then break end
        end
        local lane = site.lanes[site.next]
        seq = nextOf(lane, mergesToo)
        if seq then
          -- The rest of the lane's run (state/fair.ts RUN); one that ran out leaves at its next turn, as there.
          taken[#taken + 1] = tonumber(seq)
          local n = 1
          while n < ${RUN} and #taken < max do
            local more = nextOf(lane, mergesToo)
            if not more then break end
            taken[#taken + 1] = tonumber(more)
            n = n + 1
          end
          if lane.active and not lane.behind then
            lane.behind = true
            tookFrom[#tookFrom + 1] = lane.lane
          end
          site.next = site.next + 1
        else
          table.remove(site.lanes, site.next)
        end
      end
      if seq then
        t = t + 1
      else
        table.remove(turns, t)
      end
    end
  end
end
pass(false)
if deferred and #taken < max then pass(true) end
-- Lanes with nothing ready left leave their site's, and sites with none the sites'.
local gone = {}
for _, lane in ipairs(visited) do if tidy(lane) then gone[lane] = true end end
-- The lanes taken an activity from go behind those waiting, as if they began waiting now (as sql-ready.ts moves since): scored by
-- a seq of their own, which no entry takes (a lane that begins later scores its first entry's, after it). One that left the
-- ready lanes just now is not there to move (when it has some ready again, it takes its place from o:lv).
local turn = #tookFrom > 0 and redis.call('HINCRBY', P..'o:meta', 'seq', 1) or 0
for _, lane in ipairs(tookFrom) do
  local s = siteOf(lane)
  redis.call('ZADD', P..'o:lv:'..s, 'XX', turn, lane)
  if not gone[lane] then redis.call('ZADD', P..'o:rl:'..s, 'XX', turn, lane) end
end
table.sort(taken)
local out = {}
for _, seq in ipairs(taken) do
  redis.call('HSET', P..'o:owner', seq, owner)
  redis.call('ZADD', P..'o:wait', now + leaseMs, seq)
  out[#out + 1] = {seq, redis.call('HGET', P..'o:items', seq), tonumber(redis.call('HGET', P..'o:attempts', seq) or '0')}
end
return out`;

/** ARGV: prefix, owner, now, then seqs. Counts a started send on each under owner's live lease; returns the seqs marked. */
export const SENDING = `${NOW(3)}
local P, owner = ARGV[1], ARGV[2]
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

/** ARGV: prefix, owner, now, settlement JSON {delivered, released (each `wait` ms from now, `tried` keeps its attempts), dead}, the dead letters' `failed`. Returns how many were skipped. */
export const SETTLE = `${COMMON}${NOW(3)}
local owner = ARGV[2]
local s = cjson.decode(ARGV[4])
local skipped = 0
local function take(seq, tried)
  seq = tostring(seq)
  if redis.call('HGET', P..'o:owner', seq) ~= owner then
    skipped = skipped + 1
    return nil
  end
  redis.call('HDEL', P..'o:owner', seq)
  if not tried then redis.call('HDEL', P..'o:attempts', seq) end
  return seq
end
for _, seq in ipairs(s.delivered) do
  seq = take(seq)
  if seq then
    removeWaiting(seq)
    dropItem(seq)
  end
end
for _, r in ipairs(s.released) do
  local seq = take(r.seq, r.tried)
  if seq then
    unplace(seq, redis.call('HGET', P..'o:lane', seq))
    redis.call('ZADD', P..'o:wait', now + r.wait, seq)
  end
end
for _, d in ipairs(s.dead) do
  local seq = take(d.seq)
  if seq then
    local site = removeWaiting(seq)
    redis.call('ZADD', P..'o:dead', seq, seq)
    redis.call('ZADD', P..'o:deadt', now, seq)
    redis.call('ZADD', P..'o:ds:'..site, seq, seq)
    redis.call('HSET', P..'o:why', seq, cjson.encode({reason = d.reason, status = d.status, failed = tonumber(ARGV[5])}))
  end
end
return skipped`;

/** ARGV: prefix, seqs JSON (or "page": the oldest page), page size, drop (1) or retry (0: ready at once). Returns how many. */
export const DEAD = `${COMMON}
local drop = ARGV[4] == '1'
local seqs = ARGV[2] == 'page' and redis.call('ZRANGE', P..'o:dead', 0, tonumber(ARGV[3]) - 1) or cjson.decode(ARGV[2])
local count = 0
for _, seq in ipairs(seqs) do
  seq = tostring(seq)
  if redis.call('ZSCORE', P..'o:dead', seq) then
    count = count + 1
    local lane = redis.call('HGET', P..'o:lane', seq)
    dropDead(seq)
    if drop then
      dropItem(seq)
    else
      addWaiting(seq, lane)
    end
  end
end
return count`;

/** ARGV: prefix, site ('' for all), after seq, page size. Returns {seq, item JSON, why JSON} per dead letter, by seq. */
export const DEAD_LIST = `
local P, site, after, size = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local key = P..'o:dead'
if site ~= '' then
  local n = redis.call('HGET', P..'o:sites', site)
  if not n then return {} end
  key = P..'o:ds:'..n
end
local out = {}
for _, seq in ipairs(redis.call('ZRANGEBYSCORE', key, '('..after, '+inf', 'LIMIT', 0, size)) do
  out[#out + 1] = {seq, redis.call('HGET', P..'o:items', seq), redis.call('HGET', P..'o:why', seq)}
end
return out`;

/** ARGV: prefix, owner, now, ttl ms. Returns 1 when `owner` leads. */
export const LEAD = `${NOW(3)}
local key, owner = ARGV[1]..'o:lead', ARGV[2]
local holder = redis.call('GET', key)
if holder and holder ~= owner and redis.call('PEXPIRETIME', key) > now then return 0 end
redis.call('SET', key, owner, 'PXAT', string.format('%d', now + tonumber(ARGV[4])))
return 1`;

/** ARGV: prefix, shift. Returns {pending, dead, remembered, expired, cut}: counters, whatever the backlog. */
export const STATS = `${COMMON}${NOW(2)}
forget(math.floor(now / 1000))
local function meta(name) return tonumber(redis.call('HGET', P..'o:meta', name) or '0') end
return {meta('pending'), redis.call('ZCARD', P..'o:dead'), meta('remembered'), meta('expired'), meta('cut')}`;
