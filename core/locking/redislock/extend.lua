-- extend: reset KEYS[1]'s time to live to ARGV[2] milliseconds when it
-- still stores ARGV[1], and then register ARGV[3] as a participant in the
-- meta hash KEYS[2] for ARGV[4] milliseconds (none when '0'), keeping its
-- first registration time; a hash that did not exist gets a time to live
-- of ARGV[5] milliseconds (see acquire.lua), with priority ARGV[6]. A
-- renewal that finds the key released or taken since registers nobody: it
-- may have been on its way while its sender stopped and withdrew (H2).
-- The fence is not touched. Returns {code, live}: code 0 when not
-- extended, 1 when extended, 2 when extended and another live participant
-- with a priority above ARGV[6] registered at least ARGV[2] milliseconds
-- ago (B2: the holder should hand over); live the number of live
-- participants, the caller included (0 when it registers none or the
-- lease was not extended).
--
-- Quarantine (Q3, see acquire.lua): ARGV[7] '0' off, '1' on, '2' on and
-- the caller saw the meta hash before; ARGV[8] the run id it last saw. A
-- renewal refused because the server lost the key's state sets the
-- quarantine, so candidates wait one lease too. With quarantine on the
-- reply ends with the server's run id.
local quarantine = ARGV[7] or '0'
local rid = ''
if quarantine ~= '0' then
  rid = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or ''
end
local function reply(code, live)
  if quarantine == '0' then
    return {code, live}
  end
  if code == 0 and redis.call('EXISTS', KEYS[1]) == 0 then
    local m = redis.call('HMGET', KEYS[2], 'fence', 'q')
    local _, qrid = string.match(m[2] or '', '^(%d+):(%x*)$')
    local lostData = quarantine == '2' and not m[1] and not m[2]
    local newServer = ARGV[8] ~= '' and ARGV[8] ~= rid and qrid ~= rid
    if lostData or newServer then
      local t = redis.call('TIME')
      local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      redis.call('HSET', KEYS[2], 'q', string.format('%.0f:%s', ms + tonumber(ARGV[2]), rid))
      if redis.call('PTTL', KEYS[2]) < 0 then
        redis.call('PEXPIRE', KEYS[2], ARGV[5])
      end
    end
  end
  return {code, live, rid}
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return reply(0, 0)
end
if ARGV[4] ~= '0' then
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local self = 'p:' .. ARGV[3]
  local prio = tonumber(ARGV[6] or '0')
  local lease = tonumber(ARGV[2])
  -- One read of the meta hash: the caller's own record and the others'.
  local all = redis.call('HGETALL', KEYS[2])
  local since, preempt, live = ms, false, 1
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'p:' then
      local s, e, p = string.match(all[i + 1], '^(%d+):(%d+):?(%-?%d*)$')
      if s and tonumber(e) > ms then
        if all[i] == self then
          since = tonumber(s)
        else
          live = live + 1
          if (tonumber(p) or 0) > prio and tonumber(s) + lease <= ms then
            preempt = true
          end
        end
      end
    end
  end
  redis.call('HSET', KEYS[2], self, string.format('%.0f:%.0f:%d', since, ms + tonumber(ARGV[4]), prio))
  if #all == 0 then
    -- The hash was gone (or never was): give it its time to live. An
    -- existing hash keeps the one acquisitions and candidates refresh.
    redis.call('PEXPIRE', KEYS[2], ARGV[5])
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if preempt then
    return reply(2, live)
  end
  return reply(1, live)
end
return reply(redis.call('PEXPIRE', KEYS[1], ARGV[2]), 0)
