-- Records the answer to a request (model.ts `answer`). ARGV[ARG] packed: its seq, the status, the
-- headers' limit, remaining and reset (0: none usable), Retry-After in ms (-1: none), the jitter,
-- whether to return the room (1/0); then the request as `<seq>@<tag>`, the channel and key id to
-- tell waiters on. Returns {pauseMs, free, until, why, limit, remaining, used, reset, paused}.
local seq, status, wlimit, wremaining, wreset, retryAfter, jitter, wantRoom = struct.unpack('<dddddddd', ARGV[ARG])
local b = load()
local wasOut = redis.call('HDEL', KEYS[1], 'f' .. ARGV[ARG + 1]) == 1
if wasOut then b.n = math.max(0, b.n - 1) end
local fresh = seq > b.pseq
local pauseMs = 0
-- 0: no answer came in time (model.ts NO_ANSWER), as a 429 without Retry-After.
if status == 429 or status == 0 then
  -- One strike per pause: the other answers of a burst it overtook do not double it again.
  if fresh then b.k = b.k + 1 end
  local backoff = math.min({{BACKOFF_MAX_MS}}, {{BACKOFF_MS}} * 2 ^ (math.max(1, b.k) - 1)) * (1 + jitter / 2)
  if retryAfter >= {{BACKOFF_MS}} then pauseMs = retryAfter else pauseMs = math.floor(backoff + 0.5) end
  b.pause = math.max(b.pause, now + pauseMs)
  if fresh then
    b.gate, b.pseq, b.tr = nil, b.seq, false
    b.cw = math.max(1, math.floor(b.cw / 2))
  end
else
  if fresh then b.k = 0 end
  local g = b.gate
  if wreset == 0 then
    if g and g.from == -1 and seq == g.base + 1 then b.gate = nil end
  elseif fresh and (g == nil or seq > g.from or g.reset <= now) then
    if g and g.from >= 1 and seq > g.from then
      if wremaining < g.rep then b.tr = true elseif wremaining == g.rep and wremaining > 0 then b.tr = false end
    end
    b.gate = { rem = math.floor((wremaining - b.n) * share), reset = wreset, base = b.seq, from = seq,
      limit = wlimit, rep = wremaining }
  elseif wasOut and fresh and g and g.from >= 1 and seq < g.from and wreset == g.reset and wremaining > g.rep
    and share >= 1 then
    -- Counted in the gate's Remaining before the gate's own request, and kept out as in flight too (model.ts countedBefore).
    g.rem = g.rem + 1
  end
  local cap = SAFE
  if b.tr then cap = MAX end
  b.cw = math.min(cap, b.cw + 1)
end
-- The reservation kept the state as long as it can matter; a 429's pause may outlast that.
if pauseMs > 0 then keep(b) end
tell(b, ARGV[ARG + 2], ARGV[ARG + 3])
local free, untilAt, why = 0, 0, NONE
if wantRoom == 1 then free, untilAt, why = measure(b) end
-- This replica's requests will wait on an answer, which may be another replica's: it is to tell them.
if why == ANSWER then b.wait = true end
save(b)
local limit, remaining, used, reset, paused = view(b)
return { pauseMs, free, untilAt, why, limit, remaining, used, reset, paused }
