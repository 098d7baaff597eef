-- release: delete KEYS[1] when it still stores ARGV[1], then publish
-- 'released' with command ARGV[3] (PUBLISH, or SPUBLISH on Redis Cluster)
-- on the channel ARGV[2] selects: 'k' for KEYS[1]..':released', 'w' for
-- '{'..KEYS[1]..'}:released', '' for none. With ARGV[4] (a handover, B1)
-- the message is 'released:'..ARGV[4], naming the participant meant to
-- take the key. The message is sent only when someone may listen: a
-- handover, ARGV[5] '1' (an elector's lease: its candidates listen), or
-- the waiter mark KEYS[2] (same Cluster slot) exists, which subscribers
-- set; the mark is read with the lease in one MGET. Participants and the
-- fence are kept in KEYS[3] (the meta hash, same Cluster slot; given only
-- with ARGV[6] or ARGV[7]): with ARGV[6] ('p:'..OWNER, or '') that
-- participant is dropped from it first, whether or not the key is
-- released: a stopping participant withdraws in the same step (H2). With
-- a handover and ARGV[7] (milliseconds, '0' for none) the released key
-- stays ARGV[4]'s for that long: the meta field 'n' = 'UNTIL_MS:OWNER',
-- which acquire.lua honours (B1). Returns 1 when released, 0 otherwise.
if KEYS[3] and (ARGV[6] or '') ~= '' then
  redis.call('HDEL', KEYS[3], ARGV[6])
end
local v = redis.call('MGET', KEYS[1], KEYS[2])
if v[1] ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
local target = ARGV[4] or ''
local hold = tonumber(ARGV[7] or '0') or 0
if KEYS[3] and target ~= '' and hold > 0 then
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('HSET', KEYS[3], 'n', string.format('%.0f:%s', ms + hold, target))
  if redis.call('PTTL', KEYS[3]) < 0 then
    -- A hash this release created (its key had none): it lives as long
    -- as the hold.
    redis.call('PEXPIRE', KEYS[3], hold)
  end
end
if not (v[2] or target ~= '' or ARGV[5] == '1') then
  return 1
end
local msg = 'released'
if target ~= '' then
  msg = 'released:' .. target
end
if ARGV[2] == 'k' then
  redis.call(ARGV[3], KEYS[1] .. ':released', msg)
elseif ARGV[2] == 'w' then
  redis.call(ARGV[3], '{' .. KEYS[1] .. '}:released', msg)
end
return 1
