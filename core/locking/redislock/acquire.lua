-- acquire: take KEYS[1] for ARGV[2] milliseconds storing ARGV[1], when it
-- is absent. Returns -3 when taken; otherwise the holder's remaining time
-- to live in milliseconds (PTTL: -1 when the key has no expiry).
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return -3
end
return redis.call('PTTL', KEYS[1])
