-- record_load: a job record as stored (locking.RecordStore.LoadRecord).
-- KEYS[1]: the job's hash: the record's fields, and its history ring as
-- fields h<index>. ARGV[1]: "1" to return the ring too.
-- Reply: {record fields (name, value, ...), ring fields or {}, server time
-- in ms, PTTL}.
local all = redis.call('HGETALL', KEYS[1])
local fields, ring = {}, {}
for i = 1, #all, 2 do
  if string.match(all[i], '^h%d+$') then
    if ARGV[1] == '1' then
      ring[#ring + 1] = all[i]
      ring[#ring + 1] = all[i + 1]
    end
  else
    fields[#fields + 1] = all[i]
    fields[#fields + 1] = all[i + 1]
  end
end
local t = redis.call('TIME')
return {fields, ring, tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), redis.call('PTTL', KEYS[1])}
