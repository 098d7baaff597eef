-- jobs_complete: record the end of a run (locking.SlotCompletion).
-- KEYS[1]: the job's hash (see jobs_claim.lua). ARGV: 1 slot, 2 attempt,
-- 3 term, 4 done ("1"/"0"), 5 seq, 6 history record, 7 ttl ms, 8 history
-- length. Returns 1 when the unfinished claim was this run's, else 0.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local f = redis.call('HMGET', KEYS[1], 'open', 'att', 'term', 'seq')
local matched = 0
if f[1] and f[1] == ARGV[1] and f[2] == ARGV[2] and f[3] == ARGV[3] then
  matched = 1
  if ARGV[4] == '1' then
    redis.call('HDEL', KEYS[1], 'open', 'run')
  else
    redis.call('HSET', KEYS[1], 'run', '0')
  end
end
local seq, s, n = tonumber(f[4] or '0'), tonumber(ARGV[5]), tonumber(ARGV[8])
if seq and s > 0 and s <= seq and s > seq - n then
  redis.call('HSET', KEYS[1], 'h' .. ((s - 1) % n), ARGV[6])
end
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return matched
