-- extend: reset KEYS[1]'s time to live to ARGV[2] milliseconds when it
-- still stores ARGV[1]. Whatever the outcome, register ARGV[3] as a
-- participant in the meta hash KEYS[2] for ARGV[4] milliseconds (none when
-- '0'), keeping its first registration time, and keep the hash for
-- ARGV[5] milliseconds (see acquire.lua), with priority ARGV[6]. The fence
-- is not touched. Returns 0 when not extended, 1 when extended, 2 when
-- extended and another live participant with a priority above ARGV[6]
-- registered at least ARGV[2] milliseconds ago (B2: the holder should hand
-- over).
if ARGV[4] ~= '0' then
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local f = 'p:' .. ARGV[3]
  local since = ms
  local old = redis.call('HGET', KEYS[2], f)
  if old then
    local s, e = string.match(old, '^(%d+):(%d+)')
    if s and tonumber(e) > ms then
      since = tonumber(s)
    end
  end
  local prio = tonumber(ARGV[6] or '0')
  redis.call('HSET', KEYS[2], f, string.format('%.0f:%.0f:%d', since, ms + tonumber(ARGV[4]), prio))
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then
    return 0
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local all = redis.call('HGETALL', KEYS[2])
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'p:' and all[i] ~= f then
      local s, e, p = string.match(all[i + 1], '^(%d+):(%d+):?(%-?%d*)$')
      if s and tonumber(e) > ms and (tonumber(p) or 0) > prio and tonumber(s) + tonumber(ARGV[2]) <= ms then
        return 2
      end
    end
  end
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
