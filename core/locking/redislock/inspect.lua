-- inspect: the lease stored under KEYS[1] (false when absent), its PTTL,
-- the server time in milliseconds, then every field and value of the meta
-- hash KEYS[2] (see acquire.lua), flattened. Read only.
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local r = {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), ms}
local all = redis.call('HGETALL', KEYS[2])
for i = 1, #all do
  r[#r + 1] = all[i]
end
return r
