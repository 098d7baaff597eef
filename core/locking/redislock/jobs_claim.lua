-- jobs_claim: record the start of a run of a job slot (locking.SlotClaim).
-- KEYS[1]: the job's hash. ARGV: 1 slot (decimal Unix ms, "0": only ask for
-- recovery), 2 attempt, 3 recover ("1"/"0"), 4 term, 5 hold ms, 6 max
-- attempts, 7 history record, 8 ttl ms, 9 history length.
-- Fields: slot (latest recorded slot), open (unfinished slot), run ("1"
-- while its attempt has not reported its end), att, term, until (server ms
-- at which the claiming term certainly ended), paused, seq (records
-- written), h<i> (record seq at i = (seq-1) % length).
-- Reply: {status, previous slot or false, wait ms, attempt, slot or seq}.
local function less(a, b) -- non-negative decimal strings
  if #a ~= #b then
    return #a < #b
  end
  return a < b
end
local f = redis.call('HMGET', KEYS[1], 'slot', 'open', 'run', 'att', 'term', 'until', 'paused', 'seq')
for i, name in pairs({[1] = 'slot', [2] = 'open', [4] = 'att', [6] = 'until', [8] = 'seq'}) do
  if f[i] and not string.match(f[i], '^%d+$') then
    return redis.error_reply('redislock: job field ' .. name .. ' is not an integer')
  end
end
local hwm, open = f[1], f[2]
local att, term, untl, seq = tonumber(f[4] or '0'), f[5], tonumber(f[6] or '0'), tonumber(f[8] or '0')
local slot, attempt, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[6])
local prev = hwm or false
if redis.replicate_commands then
  redis.replicate_commands()
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wait = 0
if f[3] == '1' and now < untl then
  wait = untl - now
end
if f[7] == '1' then
  if attempt == 1 and slot ~= '0' and (not hwm or less(hwm, slot)) then
    redis.call('HSET', KEYS[1], 'slot', slot)
    redis.call('PEXPIRE', KEYS[1], ARGV[8])
  end
  return {'paused', prev, 0, 0, 0}
end
if attempt > 1 then
  if open ~= slot or att ~= attempt - 1 or attempt > max or term == ARGV[4] then
    return {'refused', prev, 0, 0, 0}
  end
  if wait > 0 then
    return {'wait', prev, wait, att, 0}
  end
else
  if ARGV[3] == '1' and open and term ~= ARGV[4] and att < max then
    return {'recoverable', prev, wait, att, open}
  end
  if slot == '0' or (hwm and not less(hwm, slot)) then
    return {'started', prev, 0, 0, 0}
  end
  redis.call('HSET', KEYS[1], 'slot', slot)
end
seq = seq + 1
redis.call('HSET', KEYS[1], 'open', slot, 'run', '1', 'att', attempt, 'term', ARGV[4],
  'until', string.format('%d', now + tonumber(ARGV[5])), 'seq', seq,
  'h' .. ((seq - 1) % tonumber(ARGV[9])), ARGV[7])
redis.call('PEXPIRE', KEYS[1], ARGV[8])
return {'granted', prev, 0, attempt, seq}
