-- get: the value stored under KEYS[1] and its remaining time to live in
-- milliseconds, or nil when the key is absent.
local v = redis.call('GET', KEYS[1])
if not v then
  return false
end
return {v, redis.call('PTTL', KEYS[1])}
