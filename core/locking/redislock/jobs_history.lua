-- jobs_history: up to ARGV[1] of the newest history records, newest first.
-- KEYS[1]: the job's hash (see jobs_claim.lua); ARGV[2]: history length.
local seq = redis.call('HGET', KEYS[1], 'seq')
if not seq then
  return {}
end
if not string.match(seq, '^%d+$') then
  return redis.error_reply('redislock: job field seq is not an integer')
end
seq = tonumber(seq)
local n, len = tonumber(ARGV[1]), tonumber(ARGV[2])
local fields = {}
local s = seq
while s > 0 and s > seq - n and s > seq - len do
  fields[#fields + 1] = 'h' .. ((s - 1) % len)
  s = s - 1
end
if #fields == 0 then
  return {}
end
return redis.call('HMGET', KEYS[1], unpack(fields))
