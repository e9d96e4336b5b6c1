-- Plans one request now, or says why not: {1, seq, free, until, why, used} or {0, 0, free, until,
-- why, 0} (model.ts `reserve`; used: the most sends any window holds with this one).
local b = load()
if nw > 0 and b.seq % 16 == 15 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', windows[nw].since) end
-- Turns across replicas (model.ts CLAIM_MS): a turn not taken in time passes to the replica next.
local turns = nw > 0
if turns and b.claim and now >= b.claim.from + CLAIM then
  b.claim, b.next, b.moved = b.next, nil, true
end
local others = turns and b.claim ~= nil and b.claim.tag ~= tag
local free, untilAt, why, used, g, left = measure(b)
if why == ANSWER and b.n > 0 and b.swept + PROBE <= now then
  -- Requests of a replica that never reported back stop counting when their time is up (looked
  -- for at most once per probe time: a refusal to wait for an answer is common, a crash is not).
  b.swept = now
  local all, live = redis.call('HGETALL', KEYS[1]), 0
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 1) == 'f' then
      if tonumber(all[i + 1]) <= now then redis.call('HDEL', KEYS[1], all[i]) else live = live + 1 end
    end
  end
  if live ~= b.n then
    b.n = live
    free, untilAt, why, used, g, left = measure(b)
  end
end
-- A replica refused for want of room has the next turn, or is next after the one that has it.
local function waitTurn(from, answer)
  local mine = { tag = tag, from = from, answer = answer }
  if not others then
    b.claim, b.moved = mine, true
  elseif b.next == nil or b.next.tag == tag then
    b.next, b.moved = mine, true
  end
end
if free ~= -1 and free < 1 then
  if why == ANSWER then
    b.wait = true
    keep(b)
  end
  if turns then waitTurn(untilAt, why == ANSWER) end
  save(b)
  return { 0, 0, free, untilAt, why, 0 }
end
local seq = b.seq + 1
if nw == 0 then
  b.seq = seq
  keep(b)
  save(b)
  return { 1, seq, -1, now, NONE, 0 }
end
local after, windowFree, most = math.huge, now, 0
for i = 1, nw do
  most = math.max(most, used[i] + 1)
  local rest = allowedOf(windows[i].count) - used[i] - 1
  if rest == 0 then
    local oldest = now
    if used[i] > 0 then oldest = oldestIn(i) end
    windowFree = math.max(windowFree, oldest + windows[i].ms)
  end
  after = math.min(after, rest)
end
local result
if after <= 0 then
  result = { 1, seq, 0, windowFree, WINDOW, most }
elseif left - 1 <= 0 then
  if g.from == -1 then result = { 1, seq, 0, g.reset, ANSWER, most } else result = { 1, seq, 0, g.reset, GATE, most } end
else
  local by = answersAllow(b.cw, left - 1, b.n + 1)
  if by <= 0 then result = { 1, seq, 0, now + PROBE, ANSWER, most } else result = { 1, seq, math.min(after, left - 1, by), now, NONE, most } end
end
-- The unit another replica waited for first is left to it while it comes for it (one beside it is
-- not): this one is next, and waits as if that unit were gone.
if others and b.claim.from <= now and free <= 1 then
  -- No later than the turn's end: a turn not taken frees the unit for whoever asks.
  local u, w, ends = result[4], result[5], b.claim.from + CLAIM
  if u >= ends then u, w = ends, WINDOW end
  waitTurn(u, w == ANSWER)
  if w == ANSWER then
    b.wait = true
    keep(b)
  end
  save(b)
  return { 0, 0, 0, u, w, 0 }
end
-- Served on its turn: the turn passes to the replica next, if another.
if b.claim and b.claim.tag == tag then
  if b.next and b.next.tag ~= tag then b.claim = b.next else b.claim = nil end
  b.next, b.moved = nil, true
end
b.seq, b.n = seq, b.n + 1
if g.from == -1 and (b.gate == nil or b.gate.reset <= now) then b.gate = g end
-- The caller's other requests wait on an answer, which may be another replica's: it is to tell them.
if result[5] == ANSWER then b.wait = true end
local sent = seq .. '@' .. tag
redis.call('ZADD', KEYS[2], nowText, sent)
keep(b)
local renewed = b.renew
save(b, { 'f' .. sent, flightText })
-- A log that held nothing in its longest window may be new: it gets the state's expiry (save() gave
-- it already where it renewed both).
if used[nw] == 0 and not renewed then redis.call('PEXPIRE', KEYS[2], b.ex - now) end
return result
