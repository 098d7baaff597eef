-- acquire: take KEYS[1] (the lock key) for ARGV[2] milliseconds storing
-- ARGV[1] when it is absent, issuing a fence; KEYS[2] is the key's meta
-- hash (same Cluster slot): field 'fence' holds the last fence issued,
-- fields 'p:'..OWNER the participants as 'SINCE_MS:EXPIRES_MS'.
--
-- ARGV[3] owner, ARGV[4] participant ttl in ms ('0': do not register),
-- ARGV[5] meta hash ttl in ms, ARGV[6] channel mode and ARGV[7] publish
-- command as in release.lua.
--
-- Returns {1, fence} when taken; {0, pttl, holder value} when held (pttl
-- -1: no expiry); {2, stored} when the stored fence is not a number below
-- 2^53 (nothing is written then).
local function register(ms)
  if ARGV[4] == '0' then
    return
  end
  local f = 'p:' .. ARGV[3]
  local since = ms
  local old = redis.call('HGET', KEYS[2], f)
  if old then
    local s, e = string.match(old, '^(%d+):(%d+)$')
    if s and tonumber(e) > ms then
      since = tonumber(s)
    end
  end
  redis.call('HSET', KEYS[2], f, string.format('%.0f:%.0f', since, ms + tonumber(ARGV[4])))
end

local t = redis.call('TIME')
local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ms = math.floor(us / 1000)

local held = redis.call('GET', KEYS[1])
if held then
  register(ms)
  if ARGV[4] ~= '0' then
    redis.call('PEXPIRE', KEYS[2], ARGV[5])
  end
  return {0, redis.call('PTTL', KEYS[1]), held}
end

local stored = redis.call('HGET', KEYS[2], 'fence')
local fence = us
if stored then
  local n = tonumber(stored)
  if not string.match(stored, '^%d+$') or #stored > 16 or n >= 9007199254740991 then
    return {2, stored}
  end
  if n + 1 > fence then
    fence = n + 1
  end
end

redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('HSET', KEYS[2], 'fence', string.format('%.0f', fence))
register(ms)
redis.call('PEXPIRE', KEYS[2], ARGV[5])
-- Drop expired participants: once per acquisition (not per extension),
-- and only by callers that register participants.
if ARGV[4] ~= '0' then
  local all = redis.call('HGETALL', KEYS[2])
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'p:' then
      local e = string.match(all[i + 1], '^%d+:(%d+)$')
      if e and tonumber(e) <= ms then
        redis.call('HDEL', KEYS[2], all[i])
      end
    end
  end
end
if ARGV[6] == 'k' then
  redis.call(ARGV[7], KEYS[1] .. ':released', 'acquired:' .. ARGV[3])
elseif ARGV[6] == 'w' then
  redis.call(ARGV[7], '{' .. KEYS[1] .. '}:released', 'acquired:' .. ARGV[3])
end
return {1, fence}
