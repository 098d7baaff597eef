-- extend: reset KEYS[1]'s time to live to ARGV[2] milliseconds when it
-- still stores ARGV[1]. Whatever the outcome, register ARGV[3] as a
-- participant in the meta hash KEYS[2] for ARGV[4] milliseconds (none when
-- '0'), keeping its first registration time, and keep the hash for
-- ARGV[5] milliseconds (see acquire.lua). The fence is not touched.
-- Returns 1 when extended, 0 otherwise.
if ARGV[4] ~= '0' then
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
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
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
