-- deregister: drop participant ARGV[1] ('p:'..OWNER) from the meta hash
-- KEYS[1]. A script, not a bare HDEL, so that deregistrations made at
-- once (a process stopping many electors) travel in pipelined round trips
-- with the provider's other coalesced calls.
return redis.call('HDEL', KEYS[1], ARGV[1])
