-- extend: reset KEYS[1]'s time to live to ARGV[2] milliseconds when it
-- still stores ARGV[1]. Returns 1 when extended, 0 otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
