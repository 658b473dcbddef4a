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
 * @module
 */
import { MERGES_PER_LEASE } from './fair.js';
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
      pending, siteWaiting[n], laneWaiting[lane] = pending + 1, siteWaiting[n] + 1, laneWaiting[lane] + 1
      accepted[#accepted + 1] = {i = i, key = key, n = n, lane = lane}
      out[#out + 1] = 1
    end
  end
end
-- Then the accepted, with seqs reserved together: each newer than any in the outbox, so an item is
-- behind a merge of its browser exactly when the browser has one in the outbox, or earlier here.
local added = #accepted
local seq = added > 0 and redis.call('HINCRBY', P..'o:meta', 'seq', added) - added or 0
local merged, ready, counted = {}, {}, {}
for _, a in ipairs(accepted) do
  seq = seq + 1
  local i, n, lane = a.i, a.n, a.lane
  local browser, merge = n..':'..ARGV[i + 4], ARGV[i + 3] == 'm'
  redis.call('SET', a.key, 1, 'PXAT', string.format('%d', untilMs))
  redis.call('HSET', P..'o:items', seq, ARGV[i + 5])
  redis.call('HSET', P..(merge and 'o:mb' or 'o:ab'), seq, browser)
  if merged[browser] == nil then merged[browser] = redis.call('EXISTS', P..'o:mq:'..browser) == 1 end
  inLane(seq, lane, merge and browser or nil)
  if merged[browser] then redis.call('ZADD', P..'o:h:'..browser, seq, seq) else toReady(seq, lane, ready) end
  if merge then merged[browser] = true end
  -- The site began waiting at its first entry, when it had none.
  if not counted[n] then
    counted[n] = 0
    if redis.call('HEXISTS', P..'o:ps', n) == 0 then redis.call('ZADD', P..'o:ls', 'NX', seq, n) end
  end
  counted[n] = counted[n] + 1
end
for n, count in pairs(counted) do redis.call('HINCRBY', P..'o:ps', n, count) end
if added > 0 then redis.call('HINCRBY', P..'o:meta', 'pending', added) end
if added > 0 then
  redis.call('ZADD', P..'o:n', bucket, bucket)
  redis.call('HINCRBY', P..'o:nc', bucket, added)
  redis.call('HINCRBY', P..'o:meta', 'remembered', added)
end
return out`;

/**
 * ARGV: prefix, owner, now, lease ms, max. First moves what has come due in \`o:wait\` to its place
 * (twice max at most), then takes ready entries in turns, as state/fair.ts: one per site (the
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
local visited, chosen, taken = {}, {}, {}
local mergesTaken, deferred = 0, false
local function take(lane, seq, browser)
  chosen[seq] = true
  -- A merge: the browser's next one, held only behind it, goes next in this lane's turns.
  if browser and redis.call('HGET', P..'o:ab', seq) == false then
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
        seq = nextOf(site.lanes[site.next], mergesToo)
        if seq then site.next = site.next + 1 else table.remove(site.lanes, site.next) end
      end
      if seq then
        taken[#taken + 1] = tonumber(seq)
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
for _, lane in ipairs(visited) do tidy(lane) end
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
