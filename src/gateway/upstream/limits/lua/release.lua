-- Ends request ARGV[ARG], which got no answer (model.ts `release`): ARGV from ARG: seq, whether to
-- return the room (1/0), the channel and key id to tell waiters on, whether it was never sent (1/0:
-- then its send leaves the log, and its part of the gate it was planned on comes back). Returns
-- {free, until, why}.
local seq, wantRoom = tonumber(ARGV[ARG]), ARGV[ARG + 1] == '1'
local b = load()
local g = b.gate
if redis.call('HDEL', KEYS[1], 'f' .. seq .. '@' .. tag) == 1 then
  b.n = math.max(0, b.n - 1)
  redis.call('HSET', KEYS[1], 'n', b.n)
  if ARGV[ARG + 4] == '1' then
    redis.call('ZREM', KEYS[2], seq .. '@' .. tag)
    if g and g.from ~= -1 and seq > g.base then
      g.rem = g.rem + 1
      redis.call('HSET', KEYS[1], 'grem', g.rem)
    end
  end
end
if g and g.from == -1 and seq == g.base + 1 then
  b.gate = nil
  redis.call('HDEL', KEYS[1], 'gbase', 'grem', 'greset', 'gfrom', 'glimit', 'grep')
end
tell(b, ARGV[ARG + 2], ARGV[ARG + 3])
if not wantRoom then return { 0, 0, NONE } end
local free, untilAt, why = measure(b)
-- This replica's requests will wait on an answer, which may be another replica's: it is to tell them.
if why == ANSWER then redis.call('HSET', KEYS[1], 'wait', 1) end
return { free, untilAt, why }
