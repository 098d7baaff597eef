-- advance: store ARGV[1] (a decimal int64) under KEYS[1] when it is greater
-- than the stored value or nothing is stored. Returns {1, ARGV[1]} when set,
-- {0, current} otherwise. Values stay strings: Lua numbers are doubles and
-- would lose int64 precision.
local function less(a, b)
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  if na ~= nb then
    return na
  end
  if a == b then
    return false
  end
  local lt
  if #a ~= #b then
    lt = #a < #b
  else
    lt = a < b
  end
  if na then
    return not lt
  end
  return lt
end
local cur = redis.call('GET', KEYS[1])
if cur then
  if not string.match(cur, '^%-?%d+$') then
    return redis.error_reply('redislock: state value is not an integer')
  end
  if not less(cur, ARGV[1]) then
    return {0, cur}
  end
end
redis.call('SET', KEYS[1], ARGV[1])
return {1, ARGV[1]}
