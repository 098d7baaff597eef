-- record_swap: replace a job record's fields when they are still those
-- read, with one history entry, and set the hash's time to live
-- (locking.RecordStore.SwapRecord). It compares the fields themselves, so
-- every writer of the hash, whatever its version, changes what it checks.
-- KEYS[1]: the job's hash (see record_load.lua). ARGV: 1 ttl ms, 2 n, then
-- n name, value pairs as read, then m, then m name, value pairs to store,
-- then the history entry's field ("" for none) and value.
-- Reply: 1 when written, 0 when the record changed since it was read.
local all = redis.call('HGETALL', KEYS[1])
local n = tonumber(ARGV[2])
local want = {}
for i = 3, 2 + 2 * n, 2 do
  want[ARGV[i]] = ARGV[i + 1]
end
local seen = 0
for i = 1, #all, 2 do
  if not string.match(all[i], '^h%d+$') then
    if want[all[i]] ~= all[i + 1] then
      return 0
    end
    seen = seen + 1
  end
end
if seen ~= n then
  return 0
end
local at = 3 + 2 * n
local m = tonumber(ARGV[at])
local keep, set = {}, {}
for i = at + 1, at + 2 * m, 2 do
  keep[ARGV[i]] = true
  set[#set + 1] = ARGV[i]
  set[#set + 1] = ARGV[i + 1]
end
local gone = {}
for name in pairs(want) do
  if not keep[name] then
    gone[#gone + 1] = name
  end
end
if #gone > 0 then
  redis.call('HDEL', KEYS[1], unpack(gone))
end
local entry = ARGV[at + 2 * m + 1]
if entry ~= '' then
  set[#set + 1] = entry
  set[#set + 1] = ARGV[at + 2 * m + 2]
end
if #set > 0 then
  redis.call('HSET', KEYS[1], unpack(set))
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
