-- jobs_pause: pause (ARGV[1] "1") or resume ("0") a job; ARGV[2]: ttl ms.
-- KEYS[1]: the job's hash (see jobs_claim.lua).
if ARGV[1] == '1' then
  redis.call('HSET', KEYS[1], 'paused', '1')
else
  redis.call('HDEL', KEYS[1], 'paused')
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
