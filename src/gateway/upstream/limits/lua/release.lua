-- Ends a request that got no answer (model.ts `release`). ARGV[ARG] packed: its seq, whether to
-- return the room (1/0), whether it was never sent (1/0: then its send leaves the log, and its part
-- of the gate it was planned on comes back); then the request as `<seq>@<tag>`, the channel and key
-- id to tell waiters on. Returns {free, until, why}.
local seq, wantRoom, unsent = struct.unpack('<ddd', ARGV[ARG])
local sent = ARGV[ARG + 1]
local b = load()
local g = b.gate
if redis.call('HDEL', KEYS[1], 'f' .. sent) == 1 then
  b.n = math.max(0, b.n - 1)
  if unsent == 1 then
    redis.call('ZREM', KEYS[2], sent)
    if g and g.from ~= -1 and seq > g.base then g.rem = g.rem + 1 end
  end
end
if g and g.from == -1 and seq == g.base + 1 then b.gate = nil end
tell(b, ARGV[ARG + 2], ARGV[ARG + 3])
local free, untilAt, why = 0, 0, NONE
if wantRoom == 1 then free, untilAt, why = measure(b) end
-- This replica's requests will wait on an answer, which may be another replica's: it is to tell them.
if why == ANSWER then b.wait = true end
save(b)
return { free, untilAt, why }
