-- take: the plain lock's acquisition (a caller that registers no
-- participant, quarantine off). KEYS[1] is the lock key, KEYS[2] its meta
-- hash (see acquire.lua; same Cluster slot). ARGV[1] the value, ARGV[2]
-- the lease in ms, ARGV[3] the meta hash ttl in ms.
--
-- A free key is taken with one SET NX GET and fenced like acquire.lua:
-- max(last fence + 1, the server's TIME in microseconds), the last fence
-- read and bumped by one HINCRBY of the meta field 'fence' and raised to
-- TIME by an HSET when the clock is ahead (it is, but for acquisitions
-- within a microsecond). TIME is what keeps fences increasing when the
-- stored fence is stale rather than missing: a failover to a replica that
-- missed the last acquisitions still has an older fence, and last + 1
-- alone would issue a fence again. Fences written by acquire.lua and by
-- this script interleave and keep increasing.
--
-- Returns the fence (an integer) when taken; 'PTTL:HOLDER VALUE' (a
-- string; pttl -1: no expiry) when held; {2, stored} when the stored fence
-- is not an integer in [0, 2^53 - 1) (nothing is left written then). The
-- flat replies cost the client fewer allocations than tables.
local held = redis.pcall('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2], 'GET')
if type(held) == 'table' then
  -- Redis 6.2 refuses NX with GET (7.0 accepts it); a key of another type
  -- fails the GET below as it did the SET.
  held = redis.call('GET', KEYS[1])
  if not held then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  end
end
if held then
  return redis.call('PTTL', KEYS[1]) .. ':' .. held
end
local f = redis.pcall('HINCRBY', KEYS[2], 'fence', 1)
if type(f) == 'table' then
  -- Not an integer: take nothing.
  redis.call('DEL', KEYS[1])
  return {2, redis.call('HGET', KEYS[2], 'fence') or ''}
end
if f < 1 or f > 9007199254740991 then
  redis.call('HINCRBY', KEYS[2], 'fence', -1)
  redis.call('DEL', KEYS[1])
  return {2, redis.call('HGET', KEYS[2], 'fence') or ''}
end
local fresh = f == 1
local t = redis.call('TIME')
local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
if us > f then
  f = us
  redis.call('HSET', KEYS[2], 'fence', string.format('%.0f', f))
end
if fresh and redis.call('PTTL', KEYS[2]) < 0 then
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
return f
