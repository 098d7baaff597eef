-- gate: admit fence ARGV[1] (a canonical decimal uint64, never 0) for the
-- resource whose highest admitted fence is stored under KEYS[1], when it is
-- at least that fence, and record it. ARGV[2] names the effect performed in
-- the same step when the fence is admitted:
--   "admit"  none;
--   "set"    SET KEYS[2] ARGV[3];
--   "append" RPUSH KEYS[2] ARGV[3].
-- The effect runs before the gate is raised: when it fails (for example
-- WRONGTYPE), the script stops with nothing written.
-- Returns {1, fence} when admitted, {0, highest} when the fence is lower than
-- the highest admitted one (stale), {-1, stored} when the stored value is not
-- a decimal number. Fences stay strings: Lua numbers are doubles and would
-- lose uint64 precision, so they are compared by length, then by digits.
local fence = ARGV[1]
local cur = redis.call('GET', KEYS[1])
if cur then
  if not string.match(cur, '^%d+$') then
    return {-1, cur}
  end
  local highest = string.gsub(cur, '^0+', '')
  if highest == '' then
    highest = '0'
  end
  if #highest > #fence or (#highest == #fence and highest > fence) then
    return {0, highest}
  end
end
local op = ARGV[2]
if op == 'set' then
  redis.call('SET', KEYS[2], ARGV[3])
elseif op == 'append' then
  redis.call('RPUSH', KEYS[2], ARGV[3])
end
if cur ~= fence then
  redis.call('SET', KEYS[1], fence)
end
return {1, fence}
