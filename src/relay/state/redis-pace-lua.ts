/**
 * The pacer's script in Redis: the pacing rule of state/pace.ts (`pace`, `paceLeave`) in Lua, on
 * the `o:pacer` hash of the outbox (redis-outbox-lua.ts has the others): `tat` and `hold` (the
 * GCRA schedule and the platform's hold), `margin` and `widened` (the send margin the key's 429s
 * taught, and when: state/margin.ts), `calls` (when the calls of the shared window went, or will,
 * space-separated) and `pending` (the deliverer's last call counted ahead).
 * @module
 */
import { MAX_MARGIN, NARROW_MS, QUIET_MS, SEND_MARGIN } from './margin.js';
import { MAX_PROXY_WAIT_MS, PLATFORM_WINDOW_MS } from './pace.js';
import { NOW } from './redis-time.js';

/**
 * ARGV: prefix, now, 'proxy' | 'deliver' | 'leave' | 'leave-again' | 'hold', interval ms (for a hold: ms from now
 * to its end; to leave: ms from now until the call leaves), catch-up ms, the shared window's
 * budget and length at the base margin (state/pace.ts `pace`, `paceLeave`; the margin the key's
 * 429s widened stretches it: `sharedWindowAt`). A hold's first 429 widens the margin (`paceHold`).
 * Returns ms to wait (0 = granted; a proxy call granted a later slot: minus the ms until it; to
 * leave: from when it would have left).
 */
export const PACE = `${NOW(2)}
local key, what, x = ARGV[1]..'o:pacer', ARGV[3], tonumber(ARGV[4])
local catchup = tonumber(ARGV[5] or '0')
local budget, window = tonumber(ARGV[6] or '1'), tonumber(ARGV[7] or '1030')
local tat = tonumber(redis.call('HGET', key, 'tat') or '0')
local hold = tonumber(redis.call('HGET', key, 'hold') or '0')
local function marginAt()
  local m, widened = tonumber(redis.call('HGET', key, 'margin') or ''), tonumber(redis.call('HGET', key, 'widened') or '')
  if not m or not widened then return ${SEND_MARGIN} end
  m = m - math.max(0, now - widened - ${QUIET_MS}) / ${NARROW_MS} * 0.01
  return math.min(${MAX_MARGIN}, math.max(${SEND_MARGIN}, m))
end
if what == 'hold' then
  if now >= hold then
    redis.call('HSET', key, 'margin', string.format('%.6f', math.min(${MAX_MARGIN}, 2 * marginAt())), 'widened', string.format('%d', now))
  end
  if now + x > hold then redis.call('HSET', key, 'hold', string.format('%d', now + x)) end
  return 0
end
local again = what == 'leave-again'
if again then what = 'leave' end
local from = now
if what == 'leave' then from = now + math.max(0, x) end
if from < hold then return math.ceil(hold - from) end
if what == 'deliver' then
  if tat > now then return math.ceil(tat - now) end
  redis.call('HSET', key, 'tat', string.format('%.3f', math.max(tat, now - catchup) + x))
  return 0
end
window = math.max(window, math.floor(${PLATFORM_WINDOW_MS} * (1 + marginAt()) + 0.5))
local calls = {}
local pending = redis.call('HGET', key, 'pending')
local moved = false
for at in string.gmatch(redis.call('HGET', key, 'calls') or '', '%S+') do
  if tonumber(at) > now - window then
    if again and not moved and at == pending then moved = true else calls[#calls + 1] = tonumber(at) end
  end
end
local function store()
  local text = {}
  for i = 1, #calls do text[i] = string.format('%.3f', calls[i]) end
  redis.call('HSET', key, 'calls', table.concat(text, ' '))
end
local function fits(t)
  local all = {t}
  for i = 1, #calls do all[#all + 1] = calls[i] end
  table.sort(all)
  for i = 1, #all - budget do if all[i + budget] - all[i] < window then return false end end
  return true
end
local function freeAt(from)
  local candidates = {from}
  for i = 1, #calls do
    if calls[i] >= from then candidates[#candidates + 1] = calls[i] end
    if calls[i] + window >= from then candidates[#candidates + 1] = calls[i] + window end
  end
  table.sort(candidates)
  for i = 1, #candidates do if fits(candidates[i]) then return candidates[i] end end
  return candidates[#candidates] + window
end
local at = freeAt(from)
if what == 'leave' and at > from then
  if moved then store() end
  return math.ceil(at - from)
end
if what == 'proxy' then
  if at - now > ${MAX_PROXY_WAIT_MS} then return math.ceil(at - now) end
  redis.call('HSET', key, 'tat', string.format('%.3f', math.max(tat, at) + x))
end
calls[#calls + 1] = at
table.sort(calls)
if what == 'leave' then redis.call('HSET', key, 'pending', string.format('%.3f', at)) end
store()
if what == 'proxy' and at > now then return -math.ceil(at - now) end
return 0`;
