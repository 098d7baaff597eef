-- acquire: take KEYS[1] (the lock key) for ARGV[2] milliseconds storing
-- ARGV[1] when it is absent, issuing a fence; KEYS[2] is the key's meta
-- hash (same Cluster slot): field 'fence' holds the last fence issued,
-- fields 'p:'..OWNER the participants as 'SINCE_MS:EXPIRES_MS:PRIORITY'
-- (records without ':PRIORITY' have priority 0).
--
-- ARGV[3] owner, ARGV[4] participant ttl in ms ('0': do not register),
-- ARGV[5] meta hash ttl in ms, ARGV[6] channel mode and ARGV[7] publish
-- command as in release.lua, ARGV[8] the participant's priority, ARGV[9]
-- how long (ms) a free key waits for a higher-priority live participant
-- before a lower-priority caller may take it (B2; '0': no wait). The
-- meta field 'free' records since when a lower-priority caller found it
-- free; an acquisition clears it, and the field 'n' (a hold for a named
-- successor, see release.lua) with it.
--
-- Returns {1, fence} when taken; {0, wait, holder value, top priority}
-- when held: wait is the microseconds from the server's TIME until the
-- holder's expiry millisecond (PEXPIRETIME) begins, at least 1; Redis
-- frees the key once its clock has passed that millisecond, so the key is
-- free at most 1ms after wait (-1: no expiry; the highest priority among
-- the live participants, 0 when none); {2, stored} when the stored fence
-- is not a number below 2^53 (nothing is written then). The quarantine and
-- priority waits below are microseconds too.
--
-- Quarantine after state loss (Q3): ARGV[10] '0' off; '1' on; '2' on and
-- the caller saw this key's meta hash before. ARGV[11] is the server run
-- id the caller last saw for this key ('' none). The server lost the
-- key's state when its 'fence' and 'q' are gone although the caller saw
-- the meta hash or the server has been up for less than a lease (a
-- restart without persistence), or when the run id changed
-- (a restart or a failover) and no quarantine was set for this run id
-- yet. Then the meta field 'q' = 'UNTIL_MS:RUNID' is set to now + the
-- lease, and until UNTIL a free key is refused: {0, wait, '', top}. The
-- field is kept (with the hash) so one loss quarantines once. With
-- quarantine on, every reply ends with the server's run id.
local t = redis.call('TIME')
local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ms = math.floor(us / 1000)
local registering = ARGV[4] ~= '0'
local self = 'p:' .. ARGV[3]
local prio = tonumber(ARGV[8] or '0')

-- One read of the meta hash serves everything below: the caller's own
-- record (its first registration time), the live participants' top
-- priority, the expired ones, the stored fence and the B2 'free' mark.
local quarantine = ARGV[10] or '0'
local rid, young = '', false
if quarantine ~= '0' then
  local info = redis.call('INFO', 'server')
  rid = string.match(info, 'run_id:(%x+)') or ''
  -- A server up for less than a lease (whole seconds, rounded up) knows
  -- nothing of what it held before it started: a key without a meta hash
  -- may have been held there.
  local up = tonumber(string.match(info, 'uptime_in_seconds:(%d+)') or '0')
  young = up * 1000 < tonumber(ARGV[2]) + 1000
end
local function reply(r)
  if quarantine ~= '0' then
    r[#r + 1] = rid
  end
  return r
end

local meta = {}
local all
if registering then
  all = redis.call('HGETALL', KEYS[2])
  for i = 1, #all, 2 do
    meta[all[i]] = all[i + 1]
  end
else
  -- A plain lock user needs only the fence.
  meta['fence'] = redis.call('HGET', KEYS[2], 'fence') or nil
  all = {}
  if meta['fence'] then
    all = {'fence', meta['fence']}
  end
  if quarantine ~= '0' then
    meta['q'] = redis.call('HGET', KEYS[2], 'q') or nil
    if meta['q'] then
      all[#all + 1] = 'q'
      all[#all + 1] = meta['q']
    end
  end
end
local since, top, others, expired = ms, nil, false, {}
for f, v in pairs(meta) do
  if string.sub(f, 1, 2) == 'p:' then
    local s, e, p = string.match(v, '^(%d+):(%d+):?(%-?%d*)$')
    if e and tonumber(e) > ms then
      if f == self then
        since = tonumber(s)
      else
        others = true
      end
      local n = tonumber(p) or 0
      if f == self then
        n = prio
      end
      if top == nil or n > top then
        top = n
      end
    elseif f ~= self then
      expired[#expired + 1] = f
    end
  end
end
if registering and (top == nil or prio > top) then
  top = prio
end
local record = string.format('%.0f:%.0f:%d', since, ms + tonumber(ARGV[4]), prio)

local held = redis.call('GET', KEYS[1])
if held then
  if registering then
    redis.call('HSET', KEYS[2], self, record)
    if #all == 0 then
      redis.call('PEXPIRE', KEYS[2], ARGV[5])
    end
  end
  -- PEXPIRETIME (Redis 7.0) gives the expiry to the millisecond, where
  -- PTTL would lose up to 1ms to truncation; before 7.0, PTTL against the
  -- millisecond of TIME.
  local at = redis.pcall('PEXPIRETIME', KEYS[1])
  if type(at) ~= 'number' then
    at = redis.call('PTTL', KEYS[1])
    if at >= 0 then
      at = ms + at
    end
  end
  local wait = -1
  if at >= 0 then
    wait = math.max(at * 1000 - us, 1)
  end
  return reply({0, wait, held, top or 0})
end

-- Q3: a free key after the server lost its state waits one lease.
if quarantine ~= '0' then
  local until_ms, qrid = string.match(meta['q'] or '', '^(%d+):(%x*)$')
  until_ms = tonumber(until_ms)
  local lostData = (quarantine == '2' or young) and not meta['fence'] and not meta['q']
  local newServer = ARGV[11] ~= '' and ARGV[11] ~= rid and qrid ~= rid
  if lostData or newServer then
    until_ms = ms + tonumber(ARGV[2])
    redis.call('HSET', KEYS[2], 'q', string.format('%.0f:%s', until_ms, rid))
    if #all == 0 then
      redis.call('PEXPIRE', KEYS[2], ARGV[5])
      all = {'q', ''}
    end
  end
  if until_ms and ms < until_ms then
    return reply({0, until_ms * 1000 - us, '', top or 0})
  end
end

-- B1: a key released to a named successor with a hold (release.lua's
-- meta field 'n' = 'UNTIL_MS:OWNER') stays the successor's until it takes
-- it or the hold ends: another caller that registers is refused as while
-- held, with the hold's remaining time and no holder.
if registering and meta['n'] then
  local until_ms, owner = string.match(meta['n'], '^(%d+):(.*)$')
  until_ms = tonumber(until_ms)
  if until_ms and ms < until_ms and owner ~= ARGV[3] then
    redis.call('HSET', KEYS[2], self, record)
    return reply({0, until_ms * 1000 - us, '', top or 0})
  end
end

-- B2: a higher-priority live participant gets the first chance at a free
-- key, for ARGV[9] ms.
local wait = tonumber(ARGV[9] or '0')
if wait > 0 and registering and others and top > prio then
  local seen = tonumber(meta['free'] or '')
  if not seen then
    seen = ms
    redis.call('HSET', KEYS[2], self, record, 'free', string.format('%.0f', ms))
  else
    redis.call('HSET', KEYS[2], self, record)
  end
  if ms < seen + wait then
    return reply({0, (seen + wait) * 1000 - us, '', top})
  end
end

local stored = meta['fence']
local fence = us
if stored then
  local n = tonumber(stored)
  if not string.match(stored, '^%d+$') or #stored > 16 or n >= 9007199254740991 then
    return reply({2, stored})
  end
  if n + 1 > fence then
    fence = n + 1
  end
end

redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if registering then
  redis.call('HSET', KEYS[2], 'fence', string.format('%.0f', fence), self, record)
  -- Drop expired participants: once per acquisition (not per
  -- extension), and only by callers that register participants.
  if #expired > 0 then
    redis.call('HDEL', KEYS[2], unpack(expired))
  end
else
  redis.call('HSET', KEYS[2], 'fence', string.format('%.0f', fence))
end
if meta['free'] or meta['n'] then
  redis.call('HDEL', KEYS[2], 'free', 'n')
end
if #all == 0 then
  -- A new hash gets its time to live; an existing one keeps it, so the
  -- fence and the participants live MetaTTL from the hash's creation and
  -- a later hash starts again from the server's clock.
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
end
-- Announce the holder to the role's watchers (P2); a plain lock user
-- (not registering) has none.
-- The message carries the fence, so a holder that hears it late can tell
-- an older acquisition from a newer one (Q1).
if registering then
  local msg = 'acquired@' .. string.format('%.0f', fence) .. ':' .. ARGV[3]
  if ARGV[6] == 'k' then
    redis.call(ARGV[7], KEYS[1] .. ':released', msg)
  elseif ARGV[6] == 'w' then
    redis.call(ARGV[7], '{' .. KEYS[1] .. '}:released', msg)
  end
end
return reply({1, fence})
