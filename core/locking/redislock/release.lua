-- release: delete KEYS[1] when it still stores ARGV[1], then publish the
-- release on channel ARGV[2] with command ARGV[3] (PUBLISH, or SPUBLISH on
-- Redis Cluster) unless ARGV[2] is empty. Returns 1 when released, 0
-- otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] ~= '' then
    redis.call(ARGV[3], ARGV[2], '')
  end
  return 1
end
return 0
