-- release: delete KEYS[1] when it still stores ARGV[1], then publish
-- 'released' with command ARGV[3] (PUBLISH, or SPUBLISH on Redis Cluster)
-- on the channel ARGV[2] selects: 'k' for KEYS[1]..':released', 'w' for
-- '{'..KEYS[1]..'}:released', '' for none. Participants and the fence are
-- kept. Returns 1 when released, 0 otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] == 'k' then
    redis.call(ARGV[3], KEYS[1] .. ':released', 'released')
  elseif ARGV[2] == 'w' then
    redis.call(ARGV[3], '{' .. KEYS[1] .. '}:released', 'released')
  end
  return 1
end
return 0
